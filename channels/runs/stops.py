"""Stop requests over Redis Pub/Sub: the web announces, every worker process listens.

The durable record of a stop is the run's ``stop_requested`` (``Store.request_stop``,
written first); this is only the wake-up that lets a worker stop within a Redis round
trip while it waits on the model. A wake-up lost to a Redis outage costs latency, not
the stop: the loop also reads the record before every model call and tool (but the
first model call of a run just admitted under the watcher, whose record holds no stop).
A stop of a turn whose task has not started yet races that task for the segment's start
(``channels.runs.claims``).

One ``StopWatcher`` per process (after a prefork fork, the child builds its own): one
Pub/Sub connection on the channel ``relayline:stops`` whatever the number of runs, and
a map from run id to the ``StopSignal`` of each run this process executes now.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable

import redis

from relayline.channels.keys import STOPS_CHANNEL
from relayline.shared.stop_signal import StopSignal

logger = logging.getLogger("relayline.stops")

#: how long ``watch`` waits for the first subscription before going on without it
_SUBSCRIBE_WAIT = 2.0
#: pause before resubscribing after Redis went away
_RETRY = 1.0


def announce_stop(client: redis.Redis, run_id: str) -> None:
    """Wake whichever worker process executes ``run_id`` (after ``request_stop``)."""
    client.publish(STOPS_CHANNEL, run_id)


class StopWatcher:
    """Sets the token of a watched run when its stop is announced."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._tokens: dict[str, set[StopSignal]] = {}
        self._subscribed = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        #: the listener runs: set before it starts, cleared as it ends (read instead of
        #: ``Thread.is_alive``, which under gevent yields to the hub, and did so with
        #: the lock held: a convoy of every run starting in a burst)
        self._listening = False
        self._pid = os.getpid()

    def start(self) -> None:
        """Subscribe now, not on the first ``watch`` (a worker calls this when it is
        ready): the first runs of a burst need not wait for the subscription."""
        with self._lock:
            self._start()

    def watch(self, run_id: str, token: StopSignal) -> Callable[[], None]:
        """Set ``token`` when ``run_id``'s stop is announced; returns the unwatch."""
        with self._lock:
            self._tokens.setdefault(run_id, set()).add(token)
            self._start()

        def unwatch() -> None:
            with self._lock:
                tokens = self._tokens.get(run_id)
                if tokens is not None:
                    tokens.discard(token)
                    if not tokens:
                        del self._tokens[run_id]

        self._subscribed.wait(_SUBSCRIBE_WAIT)
        return unwatch

    def close(self) -> None:
        self._closed.set()

    def _start(self) -> None:
        if self._listening:
            return
        self._listening = True
        self._thread = threading.Thread(target=self._listen, name="relayline-stops", daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        try:
            self._subscribe_until_closed()
        finally:
            self._listening = False  # the next watch starts another

    def _subscribe_until_closed(self) -> None:
        while not self._closed.is_set():
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
            try:
                pubsub.subscribe(STOPS_CHANNEL)
                while not self._closed.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    self._subscribed.set()  # get_message confirmed the subscription
                    if message is not None and message.get("type") == "message":
                        self._wake(message["data"])
            except (redis.RedisError, OSError) as exc:
                self._subscribed.clear()
                logger.warning("stop listener lost Redis (%s); resubscribing", exc)
                self._closed.wait(_RETRY)
            finally:
                with contextlib.suppress(redis.RedisError, OSError):
                    pubsub.close()

    def _wake(self, data: bytes | str) -> None:
        run_id = data.decode() if isinstance(data, bytes) else data
        with self._lock:
            tokens = list(self._tokens.get(run_id, ()))
        for token in tokens:
            token.set()


_watcher: tuple[int, StopWatcher] | None = None
_watcher_lock = threading.Lock()


def process_watcher(client: redis.Redis) -> StopWatcher:
    """This process's watcher, built on first use (a forked child builds its own)."""
    global _watcher
    with _watcher_lock:
        if _watcher is None or _watcher[0] != os.getpid():
            _watcher = (os.getpid(), StopWatcher(client))
        return _watcher[1]
