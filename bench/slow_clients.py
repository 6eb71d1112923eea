"""Memory of the web with clients that never read (issue 34, fault 11).

    PYTHONPATH=. .venv/bin/python bench/slow_clients.py [--clients 40] [--megabytes 8]

One ended native segment of ``--megabytes`` MB (text events of 128 kB, as a large tool
result or a long answer would be logged) sits in a private Redis; the production web
server (``relayline web``'s gunicorn gevent worker) serves it. ``--clients`` sockets
send ``GET /api/threads/<id>/stream`` and never read a byte. Printed: the web worker's
RSS idle (the baseline), with the clients connected and stalled, and after they closed;
the target is that the stalled clients cost at most the byte budget each beyond the
kernel's socket buffers, and that RSS returns to within 10% of what it was before them
(the figures are ratios against the baseline of the same run); and how many of them
the byte budget dropped (``--web-env RELAYLINE_CLIENT_BUFFER_BYTES=...`` to compare).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import redis

from relayline.channels import LogLimits, LogOnlyChannel, SegmentLog
from relayline.cli import web_command, web_env
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from tests.support.channel_support import State
from tests.support.redis_server import RedisDatabases, redis_server
from tests.support.soketi import free_port
from tests.support.stack import stack_env

EVENT_BYTES = 128 * 1024


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def settled_rss(pid: int, quiet: float = 2.0, patience: float = 60.0) -> int:
    """The RSS once it stopped moving by more than 1 MB for ``quiet`` seconds."""
    deadline = time.monotonic() + patience
    last, since = rss_kib(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)  # sampling a process's memory: the measurement itself
        now = rss_kib(pid)
        if abs(now - last) > 1024:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    return rss_kib(pid)


def web_worker_pid(master: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True)
        if found.stdout.split():
            return int(found.stdout.split()[0])
        time.sleep(0.1)  # the master forks its worker: polled, bounded
    raise RuntimeError("gunicorn started no worker")


@contextlib.contextmanager
def web(env: dict[str, str], port: int, log: Path) -> Iterator[int]:
    with log.open("w") as out:
        process = subprocess.Popen(
            web_command("127.0.0.1", port), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(log.read_text()[-2000:])
            time.sleep(0.1)  # a starting server, bounded
        yield web_worker_pid(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--megabytes", type=int, default=8)
    parser.add_argument(
        "--web-env", action="append", default=[], help="VAR=value for the web (an experiment)"
    )
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.web_env)
    folder = Path(tempfile.mkdtemp(prefix="relayline-slow-"))
    database = f"sqlite:///{folder / 'db.sqlite'}"
    with (
        redis_server() as base,
        RedisDatabases(base).database("bench/slow_clients.py") as url,
    ):
        client = redis.Redis.from_url(url)
        store = Store(database)
        store.create_thread("slow", "anonymous")
        store.dispose()
        segment_id = new_segment_id()
        limits = LogLimits(retention=3600, max_age=3600, max_events=100_000)
        channel = LogOnlyChannel().into_segment(
            segment_id, SegmentLog(client, segment_id, "slow", limits)
        )
        events = args.megabytes * 1024 * 1024 // EVENT_BYTES
        for index in range(events):
            channel.send(ProtocolEvent("text", {"content": f"{index:08d}" * (EVENT_BYTES // 8)}))
        channel.completed(State("slow"), "slow")
        env = {**web_env(stack_env(url, database, folder)), "RELAYLINE_METRICS": "1", **extra}
        port = free_port()
        with web(env, port, folder / "web.log") as pid:
            # One whole read first: what the server allocates once, whoever asks.
            with socket.create_connection(("127.0.0.1", port)) as warm:
                warm.sendall(request())
                while warm.recv(1 << 20):
                    pass
            idle = settled_rss(pid)
            stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.clients)]
            for sock in stalled:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(request())
            held = settled_rss(pid)
            dropped = dropped_clients(port)
            for sock in stalled:
                sock.close()
            after = settled_rss(pid)
        client.close()
    per_client = (held - idle) / args.clients / 1024
    print(f"{args.clients} clients that never read, a {args.megabytes} MB segment each:")
    print(f"  web RSS idle      {idle / 1024:8.1f} MB")
    print(f"  with the clients  {held / 1024:8.1f} MB  ({per_client:.1f} MB a client)")
    print(f"  after they closed {after / 1024:8.1f} MB  ({after / idle:.2f}x idle)")
    print(f"  dropped by the byte budget (RELAYLINE_CLIENT_BUFFER_BYTES): {dropped:.0f}")


def dropped_clients(port: int) -> float:
    """relayline_slow_clients_dropped_total of the web."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found = re.search(r"^relayline_slow_clients_dropped_total ([0-9.e+]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def request() -> bytes:
    return (
        b"GET /api/threads/slow/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Accept: text/event-stream\r\n\r\n"
    )


if __name__ == "__main__":
    main()
