"""A raw SSE subscriber on a Mercure hub, for tests that read what the hub dispatches.

The test hub registers a subscriber before answering but sends the response headers only
with the first update, so readiness is observed, not assumed: the subscription also
covers a public probe topic, and probes are published there until one comes back. From
then on the hub is dispatching to this subscriber."""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
import urllib.parse
import uuid

import requests

from relayline.channels.mercure import publisher_token
from tests.support.mercure_hub import MercureHub


def publish(hub: MercureHub, topic: str, data: str, private: bool = False) -> None:
    """A plain update from the test itself (probes, sentinels)."""
    fields = {"topic": topic, "data": data} | ({"private": "on"} if private else {})
    headers = {"Authorization": f"Bearer {publisher_token(hub.publisher_key)}"}
    response = requests.post(hub.url, data=fields, headers=headers, timeout=10)
    response.raise_for_status()


class HubSubscription:
    """Subscribed to ``topic`` with ``token`` once constructed, else it raises."""

    def __init__(self, hub: MercureHub, topic: str, token: str, timeout: float) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        probe = f"urn:relayline:probe:{uuid.uuid4().hex}"
        url = urllib.parse.urlsplit(hub.url)
        query = urllib.parse.urlencode([("topic", topic), ("topic", probe)])
        self.sock = socket.create_connection((url.hostname, url.port or 80), timeout=timeout)
        self.sock.settimeout(None)  # the reader blocks; close() shuts the socket down
        self.sock.sendall(
            f"GET {url.path}?{query} HTTP/1.0\r\nHost: {url.netloc}\r\n"
            f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self._await_probe(hub, probe, timeout)
        except BaseException:
            self.close()
            raise

    def _await_probe(self, hub: MercureHub, probe: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            publish(hub, probe, "probe")
            try:
                update = self._queue.get(timeout=0.2)  # one probe's round trip, bounded
            except queue.Empty:
                continue
            if update == "probe":  # later probes still on their way are skipped
                return
            raise AssertionError(f"the subscription answered {update!r} before any probe")
        raise AssertionError(f"the hub dispatched no probe within {timeout:.0f}s")

    def _read(self) -> None:
        # HTTP/1.0: no chunked encoding; the body is the event stream until close.
        with self.sock.makefile("rb") as stream:
            status = stream.readline().decode()
            if " 200 " not in status:
                self._queue.put(f"!{status.strip()}")
            while stream.readline().strip():  # headers
                pass
            data: list[str] = []
            event = ""
            for raw in stream:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif not line:
                    if data and not event:  # only unnamed ``message`` events are ours
                        self._queue.put("\n".join(data))
                    data, event = [], ""
        self._queue.put(None)

    def next_update(self, timeout: float) -> str:
        """The next update on the topic (probes skipped)."""
        while True:
            try:
                update = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no Mercure update within {timeout:.0f}s") from None
            if update is None or update.startswith("!"):
                raise AssertionError(f"the Mercure subscription ended: {update}")
            if update != "probe":
                return update

    def close(self) -> None:
        with contextlib.suppress(OSError):  # already closed by the hub
            self.sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(5)
        self.sock.close()
