"""Direct writes (web.direct) under the production server, ``relayline web``'s gunicorn
gevent worker: once a relayed response's headers are out, the log reader writes its
frames to the socket itself.

A client too slow to take them still gets every frame once, in order, in valid HTTP/1.1
chunks (the writes the kernel took only in part were finished by the response); with
RELAYLINE_RELAY_DIRECT=0 the same bytes come through the server's own writes and the
reader writes nothing itself; a client that goes away is found by the reader's write and
stops its run when it asked for that (``onDisconnect=cancel``)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from relayline.channels import LogLimits, SegmentLog
from relayline.channels.envelope import COMPLETED, encode_envelope, encode_json, terminal_data
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import Worker, fresh_env
from tests.support.web_process import WebProcess

pytestmark = pytest.mark.integration

#: events of the slow client's segment, and their text's size: several megabytes, more
#: than the web's socket send buffer grows to on loopback, so the reader's writes stall
EVENTS = 600
SIZE = 16_000
LIMITS = LogLimits(retention=60, max_age=600, max_events=EVENTS + 10)


def _metric(url: str, outcome: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=10).text
    found = re.search(
        rf'^relayline_relay_direct_writes_total\{{outcome="{outcome}"\}} ([0-9.e+]+)$',
        text,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


def _wait_for(check: object, what: str, seconds: float = 30.0) -> None:
    """A bounded wait on a condition the server shows (polled, never slept on)."""
    done = threading.Event()
    timer = threading.Timer(seconds, done.set)
    timer.start()
    try:
        while not done.is_set():
            if check():  # type: ignore[operator]
                return
            done.wait(0.05)
        raise AssertionError(f"not within {seconds:g} s: {what}")
    finally:
        timer.cancel()


class _SlowClient:
    """A raw HTTP/1.1 client with a tiny receive buffer that reads only when told to."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        self.buffer = b""

    def read_until(self, marker: bytes) -> None:
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "the server closed the response early"
            self.buffer += chunk

    def read_all(self) -> bytes:
        while chunk := self.sock.recv(1 << 20):
            self.buffer += chunk
        self.sock.close()
        return self.buffer


def _dechunked(response: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked response; any framing error fails."""
    head, _, rest = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"transfer-encoding: chunked" in head.lower(), head
    body = bytearray()
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)  # a torn chunk fails here
        if size == 0:
            assert rest == b"\r\n", "bytes after the last chunk"
            return bytes(body)
        assert rest[size : size + 2] == b"\r\n", "a chunk not followed by CRLF"
        body += rest[:size]
        rest = rest[size + 2 :]


def _text_envelope(segment_id: str, sequence: int) -> str:
    data = encode_json({"content": f"{sequence}:" + "x" * SIZE})
    return encode_envelope(segment_id, sequence, "text", data)


@pytest.fixture
def env(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[dict[str, str]]:
    with redis_databases.database(f"direct {tmp_path.name}") as redis_url:
        # A budget over the slow client's whole segment: it reads late but it reads,
        # and this test is about the writes (tests/integration/test_slow_clients.py
        # drops clients that never read).
        yield fresh_env(
            tmp_path, redis_url, RELAYLINE_METRICS="1", RELAYLINE_CLIENT_BUFFER_BYTES=str(64 << 20)
        )


@pytest.mark.parametrize("direct", ["on", "0"])
def test_a_slow_client_gets_every_frame_once_in_order_in_valid_chunks(
    env: dict[str, str], tmp_path: Path, direct: str
) -> None:
    web = WebProcess({**env, "RELAYLINE_RELAY_DIRECT": direct}, tmp_path, f"web-{direct}")
    client = redis.Redis.from_url(env["REDIS_URL"])
    store = Store(env["DATABASE_URL"], migrate=False)
    try:
        store.create_thread("d-slow", "anonymous")
        segment_id = new_segment_id()
        log = SegmentLog(client, segment_id, "d-slow", LIMITS, "native")
        log.append(_text_envelope(segment_id, 0))
        log.flush()
        reader = _SlowClient(web.port, "/api/threads/d-slow/stream")
        # Headers out: the reader may write from now on.
        reader.read_until(f"id: {segment_id}:0\n".encode())
        for sequence in range(1, EVENTS):
            log.append(_text_envelope(segment_id, sequence))
        data = encode_json(terminal_data("d-slow"))
        log.append(encode_envelope(segment_id, EVENTS, COMPLETED, data), terminal=True)
        log.flush()
        if direct == "on":
            # The client reads nothing: the reader's writes stall and go to the response.
            _wait_for(lambda: _metric(web.url, "partial") >= 1, "a write taken in part")
        body = _dechunked(reader.read_all())
        whole, partial = _metric(web.url, "whole"), _metric(web.url, "partial")
    finally:
        web.stop()
        store.dispose()
        client.close()

    sent = [f for f in body.decode().split("\n\n") if f and not f.startswith(":")]
    ids = [int(f.split("\n")[0].removeprefix(f"id: {segment_id}:")) for f in sent]
    assert ids == list(range(EVENTS))  # every event once, in order; the terminal unsent
    assert all(f.endswith(f'"content":"{n}:' + "x" * SIZE + '"}') for n, f in enumerate(sent))
    if direct == "on":
        assert whole >= 1 and partial >= 1
    else:
        assert whole == partial == 0  # every frame through the server's own writes


def test_a_client_gone_is_found_by_the_readers_write_and_stops_its_run(
    env: dict[str, str], tmp_path: Path
) -> None:
    worker = Worker(env, "w-direct")
    web = WebProcess(env, tmp_path, "web-gone")
    store = Store(env["DATABASE_URL"], migrate=False)
    try:
        live = requests.post(
            f"{web.url}/api/threads/d-gone/messages?onDisconnect=cancel",
            json={"content": "a long story"},
            stream=True,
            timeout=60,
        )
        texts = 0
        for frame in frames(live):
            texts += frame.event["type"] == "text"
            if texts == 3:
                break
        live.close()  # mid-answer: the reader's next writes fail
        _wait_for(
            lambda: (run := store.current_run("d-gone")) is not None and run.status == "cancelled",
            "the run cancelled",
        )
        gone = _metric(web.url, "gone")
    finally:
        web.stop()
        worker.stop()
        store.dispose()
    assert gone >= 1  # found by the reader's own write, not by the server's
    assert count(tmp_path, "model.closed") == 1  # the model's stream was closed
