"""Backpressure by bytes (web.slow_clients) under the production server, ``relayline
web``'s gunicorn gevent worker, with real clients that never read.

A relayed response whose client leaves more than RELAYLINE_CLIENT_BUFFER_BYTES unread,
and takes nothing for a while, is dropped: its connection ends, the counter
``relayline_slow_clients_dropped_total`` says so, and the client resumes with
``Last-Event-ID`` from the last whole event it received and gets the rest, every event
once, in order. A client that reads is never dropped under the same budget, however
large the reads that land for it at once. Both with the log reader's direct writes and
with every frame through the server's own writes (RELAYLINE_RELAY_DIRECT=0)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from relayline.channels import LogLimits, SegmentLog
from relayline.channels.envelope import COMPLETED, encode_envelope, encode_json, terminal_data
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from tests.support.chaos import until
from tests.support.redis_server import RedisDatabases
from tests.support.stack import fresh_env
from tests.support.web_process import WebProcess

pytestmark = pytest.mark.integration

#: the segment: several megabytes, far over the budget and the sockets' buffers
EVENTS = 400
SIZE = 16_000
LIMITS = LogLimits(retention=60, max_age=600, max_events=EVENTS + 10)
BUDGET = 256 * 1024
#: clients that never read a byte
STALLED = 4


def _dropped(url: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=10).text
    found = re.search(r"^relayline_slow_clients_dropped_total ([0-9.e+]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _stalled_client(port: int, path: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    return sock


def _received(sock: socket.socket) -> bytes:
    """Everything the connection holds, read only now; it must end (it was dropped):
    a connection the server kept open would time out here."""
    sock.settimeout(30)
    data = b""
    try:
        while chunk := sock.recv(1 << 20):
            data += chunk
    except ConnectionResetError:
        pass  # what the kernel held is lost with a reset: the client resumes earlier
    sock.close()
    return data


def _whole_ids(body: bytes, segment_id: str) -> list[int]:
    """The sequences of the events whose frame arrived whole."""
    pattern = rf"id: {segment_id}:(\d+)\ndata: ([^\n]*)\n\n".encode()
    return [int(m.group(1)) for m in re.finditer(pattern, body) if m.group(2).endswith(b'"}')]


@pytest.fixture
def env(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[dict[str, str]]:
    with redis_databases.database(f"slow {tmp_path.name}") as redis_url:
        yield fresh_env(
            tmp_path, redis_url, RELAYLINE_METRICS="1", RELAYLINE_CLIENT_BUFFER_BYTES=str(BUDGET)
        )


@pytest.mark.parametrize("direct", ["on", "0"])
def test_clients_that_never_read_are_dropped_and_resume_where_they_were(
    env: dict[str, str], tmp_path: Path, direct: str
) -> None:
    web = WebProcess({**env, "RELAYLINE_RELAY_DIRECT": direct}, tmp_path, f"web-{direct}")
    client = redis.Redis.from_url(env["REDIS_URL"])
    store = Store(env["DATABASE_URL"], migrate=False)
    try:
        store.create_thread("slow", "anonymous")
        segment_id = new_segment_id()
        log = SegmentLog(client, segment_id, "slow", LIMITS, "native")
        for sequence in range(EVENTS):
            data = encode_json({"content": f"{sequence}:" + "x" * SIZE})
            log.append(encode_envelope(segment_id, sequence, "text", data))
        done = encode_json(terminal_data("slow"))
        log.append(encode_envelope(segment_id, EVENTS, COMPLETED, done), terminal=True)
        log.flush()

        stalled = [_stalled_client(web.port, "/api/threads/slow/stream") for _ in range(STALLED)]
        until(lambda: _dropped(web.url) >= STALLED, "every stalled client dropped", 60)

        # A client that reads takes the whole stream under the same budget.
        reading = requests.get(f"{web.url}/api/threads/slow/stream", stream=True, timeout=60)
        whole = b"".join(reading.iter_content(1 << 16))
        assert _whole_ids(whole, segment_id) == list(range(EVENTS))
        assert _dropped(web.url) == STALLED  # the reader was not dropped

        for sock in stalled:
            body = _received(sock)
            got = _whole_ids(body, segment_id)
            assert got == list(range(len(got)))  # a prefix, in order
            assert len(got) < EVENTS  # dropped before the end
            # It resumes from the last whole event it received (none: from the start).
            headers = {"Last-Event-ID": f"{segment_id}:{got[-1]}"} if got else {}
            rest = requests.get(
                f"{web.url}/api/threads/slow/stream", headers=headers, timeout=60
            ).content
            assert got + _whole_ids(rest, segment_id) == list(range(EVENTS))
    finally:
        web.stop()
        store.dispose()
        client.close()
