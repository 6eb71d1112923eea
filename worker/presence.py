"""A worker's main process says it is alive (channels.runs.workers), so that ``/readyz``
shows the workers that could take a turn now: a beat at start, then every heartbeat
interval, and a goodbye at a warm shutdown."""

from __future__ import annotations

import logging
import threading

import redis

from relayline.channels.runs.workers import beat, leave

logger = logging.getLogger("relayline.worker")


class Presence:
    """A daemon thread beating ``name`` every ``interval`` seconds (alive ``ttl`` each)."""

    def __init__(self, client: redis.Redis, name: str, *, ttl: float, interval: float) -> None:
        self.client = client
        self.name = name
        self.ttl = ttl
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="relayline-presence")
        self._thread.daemon = True

    def start(self) -> None:
        self._beat()  # seen at once, not an interval later
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        try:
            leave(self.client, self.name)
        except redis.RedisError:  # drops out with its TTL
            logger.warning("could not remove worker %s from the live workers", self.name)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._beat()

    def _beat(self) -> None:
        try:
            beat(self.client, self.name, self.ttl)
        except redis.RedisError as exc:  # /readyz misses this worker until Redis is back
            logger.warning("could not say worker %s is alive: %s", self.name, exc)
