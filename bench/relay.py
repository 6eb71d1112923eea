"""The relay on the segment log (Redis Streams), measured against baselines taken in the
same run.

    .venv/bin/python bench/relay.py              # every part at full size
    .venv/bin/python bench/relay.py --quick      # smoke sizes (under about 2 minutes)
    .venv/bin/python bench/relay.py --part 3     # one part

Everything a client reads comes from the production web app (``relayline.web.wsgi:app``) served by
``relayline.cli.web_command``'s gunicorn gevent worker. Parts 1, 3, 4 and 5 stand in for
the worker with ``relayline.channels.stream.log.SegmentLog`` (``append``, then
``flush``/``close`` when the class has them) and ``relayline.channels.stream.log.announce``;
the client reads the native resume
stream ``GET /api/threads/<id>/stream`` of a thread row the app's store holds for the
anonymous user. Appending is timed as a worker appends: any batching SegmentLog does is
part of what a client waits for.

1. Relay latency: SegmentLog.append of a real envelope to the SSE frame at an HTTP
   client of the resume stream, against a bare redis-py XADD of the same bytes to an
   XREAD BLOCK reader, alternated message by message. Target: p50 within 0.5 ms.
2. Dispatch overhead: POST /api/threads/<new id>/messages {"content": "hello"} to the
   first SSE body byte, against the real stack (one Celery worker process, idle),
   against the same turn in-process (``Agent.stream`` with the same test agent, a SQLite
   store and the native adapter) to its first item. Target: p50 overhead at most 5 ms.
3. Fan-out: 1,000 resume streams held by one asyncio client, each fed 10 events a second
   for 30 seconds by publisher processes (one SegmentLog per stream). Every sequence
   once and in order; p99 lag at most 250 ms (baseline: a bare XREAD BLOCK reader of 10
   of the same logs in the same client loop); web CPU per relayed event at most 25 us
   (/proc/<gunicorn worker>/stat utime+stime before and after). Also printed: lag by
   arrival time, RSS, how busy the whole machine was and how long the web process
   waited for a core while runnable (/proc/<pid>/task/*/schedstat): other work on a
   shared 2-core machine starves a one-process server, and its lag is then not a figure.
4. Width: 5,000 resume streams at 1 event a second for 30 seconds on the one web
   process: zero loss, the worker's RSS at most 1 GB (baseline: its RSS idle).
5. Redis memory per stored event: INFO used_memory before and after N text-delta
   envelopes appended through SegmentLog, against the same envelopes bare-XADDed one
   per entry (and MEMORY USAGE of the keys, which other tenants of the server cannot
   disturb). Information, no target.
6. One turn of 20,000 chunks end to end: a real Celery worker running bench/relay_agent
   (a scripted model streaming as fast as it can), POST /api/threads/<id>/messages read
   to its end: events/s from the first text event to the last, target at least 20,000;
   baseline: the same turn in-process (``Agent.stream``, native adapter).

Options: ``--streams``/``--seconds`` resize part 3, ``--publishers N`` splits the stand-in
workers of parts 3 and 4 over N processes, ``--web-workers N`` is an experiment (parts 3
and 4 on N gunicorn workers instead of web_command's one), labelled as such.

Redis: tests.support.redis_server (a private server, unless RELAYLINE_TEST_REDIS_URL),
database 15 (BENCH_DB, which the tests never hand out) held through the tests'
RedisDatabases: empty at the start, flushed after. Each part has its own SQLite database
in a temporary directory. RLIMIT_NOFILE is raised to its hard limit (part 4 holds 5,000
sockets, and the web twice that on main). Every process started here is stopped by PID.
Prints a table; exits 0 whatever it measured (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import http.client
import json
import math
import multiprocessing
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.queues import Queue
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event as MPEvent
from pathlib import Path
from typing import Any, cast

import redis
import redis.asyncio

from relayline.channels.envelope import COMPLETED, encode_envelope, encode_json, terminal_data
from relayline.channels.keys import log_key
from relayline.channels.stream.log import (
    FIELD,
    ActiveSegment,
    LogLimits,
    SegmentLog,
    announce,
    forget_thread,
)
from relayline.cli import web_command
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import ANONYMOUS
from relayline.shared.persistence import Store

ROOT = Path(__file__).resolve().parents[1]
TICK = "bench.tick"
FLOOD_AGENT = "bench.relay_agent:build"


@dataclasses.dataclass(frozen=True)
class Plan:
    latency_messages: int
    dispatch_turns: int
    streams: int
    seconds: int
    rate: int  # events per second per stream (part 3)
    wide_streams: int  # part 4
    wide_seconds: int
    stored_events: int  # part 5
    flood_chunks: int  # part 6; one of bench.relay_agent.SIZES
    publishers: int = 2
    #: None: web_command's own worker count (production); a number is an experiment
    web_workers: int | None = None


FULL = Plan(
    latency_messages=2000,
    dispatch_turns=50,
    streams=1000,
    seconds=30,
    rate=10,
    wide_streams=5000,
    wide_seconds=30,
    stored_events=100_000,
    flood_chunks=20_000,
)
QUICK = Plan(
    latency_messages=200,
    dispatch_turns=10,
    streams=100,
    seconds=5,
    rate=10,
    wide_streams=500,
    wide_seconds=5,
    stored_events=5_000,
    flood_chunks=2_000,
)
LATENCY_WARMUP = 100
DISPATCH_WARMUP = 5
FLOOD_WARMUP = 100  # a small turn first: imports and connections are not the figure
#: pause between turns, so each POST finds the worker idle (its last task acked)
IDLE_GAP = 0.1
#: publishers sleep at least this long per tick (a busy loop would starve the others)
MIN_NAP = 0.002
#: the text delta of part 5: a model's typical chunk, in the native vocabulary
TYPICAL_DELTA = {"messageId": "msg_5f0c2a9e41d7b3a86c0e9f12", "content": " the answer"}
SEGMENT_EVENTS = 10_000  # part 5 spreads its events over segments of this many


@dataclasses.dataclass(frozen=True)
class Row:
    part: str
    measurement: str
    value: str
    baseline: str
    compare: str
    target: str
    verdict: str  # met, MISSED or info


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def print_table(rows: Sequence[Row], title: str) -> None:
    header = Row("part", "measurement", "value", "baseline", "vs baseline", "target", "verdict")
    cells = [dataclasses.astuple(r) for r in (header, *rows)]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(cells[0]))]
    line = "  ".join("-" * w for w in widths)
    print(f"\n{title}\n{line}")
    for index, row in enumerate(cells):
        text = "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        print(text.rstrip() + ("   <<< MISSED" if row[-1] == "MISSED" else ""))
        if index == 0:
            print(line)
    print(line, flush=True)


# statistics -----------------------------------------------------------------------


def percentile(values: Sequence[int], q: float) -> int:
    """Nearest-rank percentile of already sorted values."""
    return values[max(0, min(len(values) - 1, math.ceil(q * len(values)) - 1))]


def ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def quantile_rows(
    part: str,
    label: str,
    ours: Sequence[int],
    base: Sequence[int],
    quantiles: Sequence[tuple[str, float]],
) -> list[Row]:
    rows = []
    for name, q in quantiles:
        a, b = percentile(ours, q), percentile(base, q)
        compare = f"+{ms(a - b)} ({a / b:.2f}x)" if b else "-"
        rows.append(Row(part, f"{label} {name}", ms(a), ms(b), compare, "-", "info"))
    return rows


# processes and /proc ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def proc_status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def total_kb(pids: Sequence[int], field: str) -> int:
    return sum(proc_status_kb(pid, field) for pid in pids)


def run_queue_seconds(pids: Sequence[int]) -> float:
    """Seconds the processes' threads were runnable but waited for a core
    (/proc/<pid>/schedstat, second field): how much other work starved them."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time of processes (fields 14 and 15 of /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[float, float]:
    """Busy and total CPU seconds of the whole machine so far (/proc/stat), to tell
    whether other work on this shared machine took cores during a measurement."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclasses.dataclass(frozen=True)
class Server:
    port: int
    master: int
    workers: tuple[int, ...]  # the gevent workers: the processes whose memory counts


def http_get(port: int, path: str, timeout: float = 2.0) -> int:
    # http.client, not urllib: no proxy from the environment may sit in between.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


@contextlib.contextmanager
def gunicorn(
    env: dict[str, str], logdir: Path, workers: int | None = None, app: str | None = None
) -> Iterator[Server]:
    """``relayline web``'s exact gunicorn command (the production app) on a free port;
    ``workers`` overrides its worker count (an experiment, reported as such), ``app``
    its WSGI app (a baseline's)."""
    port = free_port()
    command = web_command("127.0.0.1", port)
    if app is not None:
        command[command.index("relayline.web.wsgi:app")] = app
    if workers is not None:
        command[command.index("--workers") + 1] = str(workers)
    expected = int(command[command.index("--workers") + 1])
    log_path = logdir / f"gunicorn-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"gunicorn exited: {log_path.read_text()[-2000:]}")
                with contextlib.suppress(OSError):
                    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
                    pids = tuple(int(pid) for pid in children.read_text().split())
                    if len(pids) == expected and http_get(port, "/healthz") == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"gunicorn not ready: {log_path.read_text()[-2000:]}")
                time.sleep(0.1)  # polling a starting server, bounded by the deadline
            yield Server(port, process.pid, pids)
        finally:
            stop_process(process)


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    from tests.support.redis_server import BENCH_DB, RedisDatabases, redis_server

    with redis_server() as base, RedisDatabases(base, [BENCH_DB]).database("bench") as url:
        yield url


# the stand-in worker: threads, segments, logs ---------------------------------------


def web_env(redis_url: str, database_url: str) -> dict[str, str]:
    """The production web app's environment: this Redis and database, one anonymous
    user (the owner of every thread the bench creates)."""
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "DATABASE_URL": database_url,
        "RELAYLINE_AUTH": "none",
        "PYTHONPATH": str(ROOT),
    }


@dataclasses.dataclass(frozen=True)
class Segment:
    thread_id: str
    segment_id: str

    @property
    def path(self) -> str:
        return f"/api/threads/{self.thread_id}/stream"


def open_segments(store: Store, client: redis.Redis, count: int, label: str) -> list[Segment]:
    """``count`` threads of the anonymous user, each with a running native segment
    announced as the web announces one at enqueue (so its resume stream waits for it)."""
    run = uuid.uuid4().hex[:8]
    segments = [Segment(f"bench-{label}-{run}-{i}", new_segment_id()) for i in range(count)]
    limits = LogLimits()
    for segment in segments:
        store.create_thread(segment.thread_id, ANONYMOUS)
        announce(client, segment.thread_id, ActiveSegment("native", segment.segment_id), limits)
    return segments


def segment_log(client: redis.Redis, segment: Segment) -> SegmentLog:
    return SegmentLog(client, segment.segment_id, segment.thread_id, LogLimits(), "native")


def tick(segment: Segment, sequence: int, sent_ns: int) -> str:
    """The envelope a channel builds for a tick event (its data carries its send time)."""
    data = f'{{"seq":{sequence},"t":{sent_ns}}}'
    return encode_envelope(segment.segment_id, sequence, TICK, data)


def end_segment(log: SegmentLog, segment: Segment, sequence: int) -> None:
    """The segment's terminal (``stream.completed``), then whatever SegmentLog keeps
    pending written: ``flush``/``close`` when it has them (batched appends), nothing to
    do when every append writes at once."""
    data = encode_json(terminal_data(segment.thread_id))
    log.append(encode_envelope(segment.segment_id, sequence, COMPLETED, data), terminal=True)
    finish_log(log)


def finish_log(log: SegmentLog) -> None:
    for name in ("flush", "close"):
        method = getattr(log, name, None)
        if callable(method):
            method()


def raise_open_files() -> None:
    """Soft RLIMIT_NOFILE up to the hard one (inherited by the web server started here):
    part 4's client holds 5,000 sockets, its web server those and a Redis connection
    per stream on main."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# the SSE client side -------------------------------------------------------------------


class SSEDecoder:
    """Incremental reader of one HTTP/1.1 SSE response: status and headers, then the
    chunked body cut into frames. ``feed`` returns each complete frame's data payload."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.done = False  # the last chunk arrived: the relay saw its terminal
        self.body_started = False
        self.comments = 0  # heartbeats
        self._raw = bytearray()
        self._body = bytearray()
        self._head = False
        self._chunked = False

    def feed(self, data: bytes) -> list[bytes]:
        raw = self._raw
        raw += data
        if not self._head:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                return []
            lines = bytes(raw[:end]).decode("latin-1").split("\r\n")
            self.status = int(lines[0].split()[1])
            for line in lines[1:]:
                key, _, value = line.partition(":")
                self.headers[key.strip().lower()] = value.strip()
            self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
            del raw[: end + 4]
            self._head = True
        if self._chunked:
            while raw:
                end = raw.find(b"\r\n")
                if end < 0:
                    break
                size = int(raw[:end].split(b";")[0], 16)
                if size == 0:
                    self.done = True
                    raw.clear()
                    break
                stop = end + 2 + size
                if len(raw) < stop + 2:
                    break  # wait for the whole chunk: each is one small frame
                self._body += raw[end + 2 : stop]
                del raw[: stop + 2]
        else:
            self._body += raw
            raw.clear()
        body = self._body
        if body:
            self.body_started = True
        frames = []
        start = 0
        while (end := body.find(b"\n\n", start)) >= 0:
            frame = bytes(body[start:end])
            start = end + 2
            # A native frame may lead with its cursor (``id: <stream id>:<sequence>``).
            if frame.startswith(b"id: "):
                frame = frame.partition(b"\n")[2]
            if frame.startswith(b"data: "):
                frames.append(frame[6:])
            else:
                self.comments += 1
        if start:
            del body[:start]
        return frames


def sse_request(path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        "Cache-Control: no-cache\r\n\r\n"
    ).encode()


class BlockingSSE:
    """One relayed stream read with a blocking socket (part 1: one message at a time)."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(sse_request(path))
        self.decoder = SSEDecoder()
        self.pending: deque[bytes] = deque()

    def wait_open(self, patience: float = 5.0) -> None:
        """Until the body began (the resume stream's first comment): the web's reader
        is about to block on the log. A server that sends its headers only with the
        first event gets ``patience`` seconds, then the bench goes on (the log replays
        what the reader was not yet waiting for; the warm-up absorbs it)."""
        self.sock.settimeout(patience)
        try:
            while not self.decoder.body_started and self.decoder.status in (0, 200):
                data = self.sock.recv(65536)
                if not data:
                    raise RuntimeError("the web closed the connection before the body")
                self.pending.extend(self.decoder.feed(data))
        except TimeoutError:
            print(f"part 1: no body after {patience:g} s; going on", flush=True)
            return
        finally:
            self.sock.settimeout(30)
        if self.decoder.status != 200:
            raise RuntimeError(f"the resume stream answered {self.decoder.status}")

    def next_event(self) -> dict[str, Any]:
        while not self.pending:
            if self.decoder.done:
                raise RuntimeError("the relayed stream ended early")
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("the relay closed the connection")
            self.pending.extend(self.decoder.feed(data))
        event: dict[str, Any] = json.loads(self.pending.popleft())
        return event

    def read_to_end(self) -> None:
        while not self.decoder.done and (data := self.sock.recv(65536)):
            self.pending.extend(self.decoder.feed(data))
        if not self.decoder.done or self.pending:
            raise RuntimeError("the relayed stream did not end cleanly after its terminal")

    def close(self) -> None:
        self.sock.close()


# part 1: latency -------------------------------------------------------------------


class BareReader:
    """A bare XREAD BLOCK reader on a connection of its own: the command goes out before
    the XADD, its reply is read after, in this one thread (no hand-off between threads)."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.pool = client.connection_pool
        self.connection = self.pool.get_connection("XREAD")
        self.key = key
        self.last = "0-0"

    def block(self) -> None:
        self.connection.send_command(  # type: ignore[no-untyped-call]
            "XREAD", "BLOCK", "10000", "STREAMS", self.key, self.last
        )

    def read(self) -> bytes:
        reply = cast(list[Any], self.connection.read_response())  # type: ignore[no-untyped-call]
        if not reply:
            raise RuntimeError("the bare XREAD reader heard nothing for 10 s")
        entry_id, fields = reply[0][1][-1]
        self.last = entry_id.decode()
        return cast(bytes, fields[1])  # [field, value]: the one field, ``e``

    def close(self) -> None:
        self.pool.release(self.connection)


def part_latency(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    database_url = f"sqlite:///{logdir / 'relay.db'}"
    store = Store(database_url)  # migrated before the web server touches it
    client = redis.Redis.from_url(redis_url)
    segment = open_segments(store, client, 1, "latency")[0]
    log = segment_log(client, segment)
    bare_segment = Segment("bare", new_segment_id())
    bare = BareReader(client, f"relayline:bench:bare:{uuid.uuid4().hex}")
    bare_ns: list[int] = []
    relay_ns: list[int] = []
    try:
        with gunicorn(web_env(redis_url, database_url), logdir) as server:
            stream = BlockingSSE(server.port, segment.path)
            stream.wait_open()
            # Alternated message by message, so that any noise hits both paths alike.
            total = LATENCY_WARMUP + plan.latency_messages
            for seq in range(total):
                bare.block()
                sent = time.perf_counter_ns()
                client.xadd(bare.key, {FIELD: tick(bare_segment, seq, sent)})
                got = json.loads(bare.read())["data"]
                arrived = time.perf_counter_ns()
                if got["seq"] != seq:
                    raise RuntimeError(f"bare reader: expected {seq}, got {got['seq']}")

                log.append(tick(segment, seq, time.perf_counter_ns()))
                event = stream.next_event()
                relayed = time.perf_counter_ns()
                if event.get("type") != TICK or event.get("seq") != seq:
                    raise RuntimeError(f"relay: expected tick {seq}, got {event}")
                if seq >= LATENCY_WARMUP:
                    bare_ns.append(arrived - got["t"])
                    relay_ns.append(relayed - event["t"])
            end_segment(log, segment, total)
            stream.read_to_end()
            stream.close()
    finally:
        bare.close()
        client.delete(bare.key)
        client.close()
        store.dispose()
    bare_ns.sort()
    relay_ns.sort()
    p50, base50 = percentile(relay_ns, 0.5), percentile(bare_ns, 0.5)
    label = f"append -> SSE frame ({plan.latency_messages} msgs)"
    return [
        Row(
            "1",
            f"{label} p50",
            ms(p50),
            ms(base50),
            f"+{ms(p50 - base50)} ({p50 / base50:.2f}x)",
            "<= +0.5 ms",
            verdict(p50 - base50 <= 0.5e6),
        ),
        *quantile_rows("1", label, relay_ns, bare_ns, [("p90", 0.9), ("p99", 0.99)]),
    ]


# part 2: dispatch overhead --------------------------------------------------------------


def post_turn(port: int, thread: str) -> tuple[int, str]:
    """POST a new turn; nanoseconds from sending it to the first SSE body byte, and
    the reply's text (read to the end, so the next turn finds the worker idle)."""
    body = b'{"content":"hello"}'
    request = (
        f"POST /api/threads/{thread}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    decoder = SSEDecoder()
    frames: list[bytes] = []
    first: int | None = None
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sent = time.perf_counter_ns()
        sock.sendall(request)
        while not decoder.done and (data := sock.recv(65536)):
            now = time.perf_counter_ns()
            frames += decoder.feed(data)
            if first is None and decoder.body_started:
                first = now
    if decoder.status != 200 or first is None or not decoder.done:
        raise RuntimeError(f"turn on {thread}: status {decoder.status}, frames {frames[:3]}")
    events = [json.loads(frame) for frame in frames]
    return first - sent, "".join(e.get("content", "") for e in events if e["type"] == "text")


def part_dispatch(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    from relayline.shared.agent import Agent
    from relayline.shared.persistence import Store
    from relayline.shared.protocols import adapter_factory
    from tests.support.agents import build_spec
    from tests.support.stack import Worker, stack_env

    database_url = f"sqlite:///{logdir / 'stack.db'}"
    Store(database_url).dispose()  # migrated before the worker touches it
    env = stack_env(redis_url, database_url, logdir)
    store = Store(f"sqlite:///{logdir / 'inprocess.db'}")
    spec = build_spec(logdir)  # what tests.support.agents:env_spec gives the worker

    def in_process(thread: str) -> tuple[int, str]:
        started = time.perf_counter_ns()
        agent = Agent(thread, spec, store)
        agent.set_stream_adapter(adapter_factory("native", thread, {}))
        items = iter(agent.stream("hello"))
        first = next(items)
        elapsed = time.perf_counter_ns() - started
        events = [first, *items]
        text = "".join(
            str(e.data.get("content", ""))
            for e in events
            if isinstance(e, ProtocolEvent) and e.type == "text"
        )
        return elapsed, text

    relayed_ns: list[int] = []
    local_ns: list[int] = []
    worker = Worker(env, "bench")
    try:
        with gunicorn(env, logdir) as server:
            # Alternated turn by turn, so that any noise hits both paths alike.
            for index in range(DISPATCH_WARMUP + plan.dispatch_turns):
                run = uuid.uuid4().hex[:12]
                remote, text = post_turn(server.port, f"bench-{index}-{run}")
                local, local_text = in_process(f"local-{index}-{run}")
                if text != "Hello! hello" or local_text != text:
                    raise RuntimeError(f"unexpected replies {text!r} / {local_text!r}")
                if index >= DISPATCH_WARMUP:
                    relayed_ns.append(remote)
                    local_ns.append(local)
                time.sleep(IDLE_GAP)
    finally:
        worker.stop()
        store.dispose()
    relayed_ns.sort()
    local_ns.sort()
    p50, base50 = percentile(relayed_ns, 0.5), percentile(local_ns, 0.5)
    label = f"POST -> first SSE byte ({plan.dispatch_turns} turns)"
    return [
        Row(
            "2",
            f"{label} p50",
            ms(p50),
            ms(base50),
            f"+{ms(p50 - base50)} ({p50 / base50:.2f}x)",
            "<= +5 ms",
            verdict(p50 - base50 <= 5e6),
        ),
        *quantile_rows("2", label, relayed_ns, local_ns, [("p90", 0.9), ("max", 1.0)]),
    ]


# parts 3 and 4: fan-out and width -------------------------------------------------------


def publish_streams(
    redis_url: str,
    segments: list[Segment],
    rate: int,
    count: int,
    ready: Queue[Any],
    go: MPEvent,
    start: Synchronized[int],
) -> None:
    """A publisher process standing in for the workers of ``segments``: one SegmentLog
    each, ``count`` ticks per segment at ``rate`` a second, segments staggered evenly over
    the period, each tick stamped with its send time; then every terminal."""
    client = redis.Redis.from_url(redis_url)
    logs = [segment_log(client, segment) for segment in segments]
    ready.put(("ready", os.getpid()))
    if not go.wait(timeout=120):
        return
    begin, streams = start.value, len(segments)
    period = 1_000_000_000 // rate
    total, sent, worst_slip = streams * count, 0, 0
    started_cpu = time.process_time()
    while sent < total:
        now = time.monotonic_ns()
        while sent < total:
            k, i = divmod(sent, streams)
            due = begin + k * period + i * period // streams
            if due > now:
                break
            worst_slip = max(worst_slip, now - due)
            # CLOCK_MONOTONIC is system-wide on Linux: comparable in the client process.
            logs[i].append(tick(segments[i], k, time.monotonic_ns()))
            sent += 1
            now = time.monotonic_ns()
        if sent < total:
            k, i = divmod(sent, streams)
            due = begin + k * period + i * period // streams
            time.sleep(max(MIN_NAP, (due - time.monotonic_ns()) / 1e9))
    for log, segment in zip(logs, segments, strict=True):
        end_segment(log, segment, count)
    ready.put(
        (
            "done",
            {"worst_slip_ns": worst_slip, "cpu": time.process_time() - started_cpu},
        )
    )
    client.close()


@dataclasses.dataclass
class Fanout:
    lags: array[int] = dataclasses.field(default_factory=lambda: array("q"))
    arrivals: array[int] = dataclasses.field(default_factory=lambda: array("q"))
    floor: array[int] = dataclasses.field(default_factory=lambda: array("q"))
    open: int = 0
    all_ended: asyncio.Future[None] | None = None

    def ended(self) -> None:
        self.open -= 1
        if self.open == 0 and self.all_ended is not None and not self.all_ended.done():
            self.all_ended.set_result(None)


class StreamClient(asyncio.Protocol):
    """One resume stream: checks order, records the lag of every event."""

    def __init__(self, path: str, run: Fanout) -> None:
        self.request = sse_request(path)
        self.run = run
        self.decoder = SSEDecoder()
        self.transport: asyncio.Transport | None = None
        self.next = 0
        self.received = 0
        self.disorder = 0
        self.foreign = 0  # frames that are not ticks: the relay's error frame
        self.ended = False
        self.clean = False  # the body ended with its last chunk, after the terminal

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        lags, arrivals = self.run.lags, self.run.arrivals
        for payload in self.decoder.feed(data):
            event = json.loads(payload)
            seq = event.get("seq")
            if event.get("type") != TICK or not isinstance(seq, int):
                self.foreign += 1
                continue
            if seq != self.next:
                self.disorder += 1
            self.next = seq + 1
            self.received += 1
            lags.append(now - event["t"])
            arrivals.append(now)
        if self.decoder.done and not self.ended:
            self.clean = True
            self._end()
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if not self.ended:
            self.ended = True
            self.run.ended()


TIMES = re.compile(rb'"seq":(\d+),"t":(\d+)\}')


async def floor_reader(redis_url: str, keys: Sequence[str], run: Fanout) -> None:
    """A bare XREAD BLOCK of a few of the same logs, in the same loop as the streams: the
    lag that publishers, Redis and this client cause by themselves. The regex reads
    every tick of an entry, one envelope or several joined by newlines."""
    client = redis.asyncio.Redis.from_url(redis_url)
    last: dict[Any, Any] = dict.fromkeys(keys, "0-0")
    try:
        while True:
            reply = cast(list[Any], await client.xread(last, block=1000))
            now = time.monotonic_ns()
            for key, rows in reply or ():
                for entry_id, fields in rows:
                    last[key.decode()] = entry_id
                    for match in TIMES.finditer(fields[FIELD.encode()]):
                        run.floor.append(now - int(match[2]))
    finally:
        await client.aclose()


def redis_cpu_seconds(client: redis.Redis) -> float:
    """The Redis server's CPU seconds, when it runs on this machine (else 0)."""
    info = cast(dict[str, Any], client.info("cpu"))
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def print_timeline(part: str, run: Fanout, begin: int, seconds: int) -> None:
    """Lag by arrival time: a backlog that grows, a burst at the start, or steady noise."""
    step = max(1, seconds // 6)
    buckets: dict[int, list[int]] = {}
    for arrived, lag in zip(run.arrivals, run.lags, strict=True):
        buckets.setdefault(max(0, arrived - begin) // (step * 1_000_000_000), []).append(lag)
    print(f"\npart {part} lag by arrival time ({step} s windows)")
    for index in sorted(buckets):
        lags = sorted(buckets[index])
        print(
            f"  {index * step:3d}-{(index + 1) * step:3d} s: {len(lags):7d} events  "
            f"p50 {ms(percentile(lags, 0.5)):>10}  p99 {ms(percentile(lags, 0.99)):>10}  "
            f"max {ms(lags[-1]):>10}"
        )


@dataclasses.dataclass(frozen=True)
class Load:
    streams: int
    rate: int
    seconds: int

    @property
    def label(self) -> str:
        return f"{self.streams} streams x {self.rate}/s x {self.seconds} s"


@dataclasses.dataclass(frozen=True)
class Measured:
    """What one fan-out run saw."""

    load: Load
    streams: int
    received: int
    disorder: int
    foreign: int
    unclean: int
    short: int
    lags: list[int]
    floor: list[int]
    idle_kb: int
    connected_kb: int
    peak_kb: int
    web_cpu: float
    web_waited: float  # runnable, waiting for a core
    client_cpu: float
    redis_cpu: float
    publisher_cpu: float
    slip_ns: int
    wall: float
    machine_busy: float
    machine_total: float
    web_workers: int

    @property
    def total(self) -> int:
        return self.load.rate * self.load.seconds * self.streams

    @property
    def delivered_ok(self) -> bool:
        return self.received == self.total and not (
            self.disorder or self.foreign or self.unclean or self.short
        )

    @property
    def workers(self) -> str:
        return f"{self.web_workers} gunicorn worker" + ("s" if self.web_workers > 1 else "")


def fanout(redis_url: str, plan: Plan, logdir: Path, load: Load, part: str) -> Measured:
    database_url = f"sqlite:///{logdir / 'relay.db'}"
    store = Store(database_url)  # migrated before the web server touches it
    client = redis.Redis.from_url(redis_url)
    try:
        segments = open_segments(store, client, load.streams, f"p{part}")
        with gunicorn(web_env(redis_url, database_url), logdir, plan.web_workers) as server:
            return asyncio.run(_fanout(redis_url, client, plan, server, load, segments, part))
    finally:
        client.close()
        store.dispose()


async def _connect(
    port: int, segments: Sequence[Segment], run: Fanout, patience: float = 5.0
) -> list[StreamClient]:
    loop = asyncio.get_running_loop()
    streams: list[StreamClient] = []
    for start in range(0, len(segments), 100):  # in waves: gentle on the accept backlog
        made = await asyncio.gather(
            *(
                loop.create_connection(
                    lambda p=s.path: StreamClient(p, run),  # type: ignore[misc]
                    "127.0.0.1",
                    port,
                )
                for s in segments[start : start + 100]
            )
        )
        streams += [protocol for _, protocol in made]
    run.open = len(streams)
    # Every body begun: each web reader is at the log (what it misses now it replays).
    # A server that sends headers only with the first event never gets there: the wait
    # ends when no stream has begun for ``patience`` seconds.
    begun, changed = 0, time.monotonic()
    while begun < len(streams):
        now_begun = sum(1 for s in streams if s.decoder.body_started or s.ended)
        if now_begun != begun:
            begun, changed = now_begun, time.monotonic()
        elif time.monotonic() - changed > patience:
            print(f"{len(streams) - begun} streams had no body yet; going on", flush=True)
            break
        await asyncio.sleep(0.05)  # the server is still accepting; bounded above
    refused = [s.decoder.status for s in streams if s.decoder.status not in (0, 200)]
    if refused:
        raise RuntimeError(f"{len(refused)} resume streams refused: {sorted(set(refused))}")
    return streams


async def _fanout(
    redis_url: str,
    client: redis.Redis,
    plan: Plan,
    server: Server,
    load: Load,
    segments: list[Segment],
    part: str,
) -> Measured:
    publishers = plan.publishers
    loop = asyncio.get_running_loop()
    run = Fanout(all_ended=loop.create_future())
    idle_kb = total_kb(server.workers, "VmRSS")
    streams = await _connect(server.port, segments, run)
    connected_kb = total_kb(server.workers, "VmRSS")
    sample = [log_key(s.segment_id) for s in segments[:: max(1, len(segments) // 10)][:10]]
    floor = asyncio.create_task(floor_reader(redis_url, sample, run))

    context = multiprocessing.get_context("spawn")
    ready: Queue[Any] = context.Queue()
    go = context.Event()
    begin = cast("Synchronized[int]", context.Value("q", 0))
    count = load.rate * load.seconds
    processes = [
        context.Process(
            target=publish_streams,
            args=(redis_url, segments[k::publishers], load.rate, count),
            kwargs={"ready": ready, "go": go, "start": begin},
            daemon=True,
        )
        for k in range(publishers)
    ]
    for process in processes:
        process.start()
    reports: list[dict[str, Any]] = []
    rss_samples: list[int] = []
    try:
        for _ in processes:
            await asyncio.to_thread(ready.get, True, 60)
        begin.value = time.monotonic_ns() + 200_000_000
        go.set()
        web_cpu, wall = cpu_seconds(server.workers), time.monotonic()
        web_waited = run_queue_seconds(server.workers)
        client_cpu, redis_cpu = time.process_time(), redis_cpu_seconds(client)
        machine_busy, machine_total = machine_cpu()
        deadline = wall + 0.2 + load.seconds + 60
        all_ended = run.all_ended
        assert all_ended is not None
        while not all_ended.done() and time.monotonic() < deadline:
            rss_samples.append(total_kb(server.workers, "VmRSS"))
            await asyncio.wait({all_ended}, timeout=0.25)
        web_cpu = cpu_seconds(server.workers) - web_cpu
        web_waited = run_queue_seconds(server.workers) - web_waited
        client_cpu = time.process_time() - client_cpu
        redis_cpu = redis_cpu_seconds(client) - redis_cpu
        busy, whole = machine_cpu()
        machine_busy, machine_total = busy - machine_busy, whole - machine_total
        wall = time.monotonic() - wall
        peak_kb = max(*rss_samples, total_kb(server.workers, "VmHWM"))
        for _ in processes:
            kind, report = await asyncio.to_thread(ready.get, True, 60)
            if kind != "done":
                raise RuntimeError(f"publisher sent {kind!r} instead of its report")
            reports.append(report)
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
        floor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await floor
        for stream in streams:
            if stream.transport is not None and not stream.ended:
                stream.transport.close()
    print_timeline(part, run, begin.value, load.seconds)
    return Measured(
        load=load,
        streams=len(streams),
        received=sum(s.received for s in streams),
        disorder=sum(s.disorder for s in streams),
        foreign=sum(s.foreign for s in streams),
        unclean=sum(1 for s in streams if not s.clean),
        short=sum(1 for s in streams if s.received != count),
        lags=sorted(run.lags),
        floor=sorted(run.floor),
        idle_kb=idle_kb,
        connected_kb=connected_kb,
        peak_kb=peak_kb,
        web_cpu=web_cpu,
        web_waited=web_waited,
        client_cpu=client_cpu,
        redis_cpu=redis_cpu,
        publisher_cpu=sum(r["cpu"] for r in reports),
        slip_ns=max(r["worst_slip_ns"] for r in reports),
        wall=wall,
        machine_busy=machine_busy,
        machine_total=machine_total,
        web_workers=len(server.workers),
    )


def delivery_rows(part: str, m: Measured) -> list[Row]:
    label = m.load.label
    return [
        Row(
            part,
            f"{label}: every sequence once, in order",
            f"{m.received}/{m.total}",
            f"{m.total}",
            f"lost {m.total - m.received}, out of order {m.disorder}, error frames {m.foreign}",
            "zero loss",
            verdict(m.delivered_ok),
        ),
        Row(
            part,
            f"{label}: streams ended cleanly",
            f"{m.streams - m.unclean}/{m.streams}",
            f"{m.streams}",
            f"short {m.short}",
            "all",
            verdict(m.unclean == 0 and m.short == 0),
        ),
    ]


def lag_rows(part: str, m: Measured, p99_target: float | None) -> list[Row]:
    label, lags, floor = m.load.label, m.lags, m.floor
    if not lags:
        return [Row(part, f"{label}: lag", "no events", "-", "-", "-", "MISSED")]
    p50, floor50 = percentile(lags, 0.5), percentile(floor, 0.5) if floor else 0
    p99, floor99 = percentile(lags, 0.99), percentile(floor, 0.99) if floor else 0
    target, met = "-", "info"
    if p99_target is not None:
        target, met = f"<= {p99_target / 1e6:.0f} ms", verdict(p99 <= p99_target)
    return [
        Row(part, f"{label}: lag p50", ms(p50), ms(floor50), f"+{ms(p50 - floor50)}", "-", "info"),
        Row(part, f"{label}: lag p99", ms(p99), ms(floor99), f"+{ms(p99 - floor99)}", target, met),
        Row(
            part, f"{label}: lag max", ms(lags[-1]), ms(floor[-1] if floor else 0), "", "-", "info"
        ),
    ]


def rss_row(part: str, m: Measured, target_mb: float | None) -> Row:
    target, met = "-", "info"
    if target_mb is not None:
        target, met = f"<= {target_mb:.0f} MB", verdict(m.peak_kb <= target_mb * 1024)
    return Row(
        part,
        f"web RSS peak ({m.workers})",
        f"{m.peak_kb / 1024:.0f} MB",
        f"{m.idle_kb / 1024:.0f} MB idle",
        f"+{(m.peak_kb - m.idle_kb) / 1024:.0f} MB "
        f"({(m.connected_kb - m.idle_kb) / max(1, m.streams):.0f} kB/stream connected)",
        target,
        met,
    )


def cpu_rows(part: str, m: Measured, per_event_target_us: float | None) -> list[Row]:
    per_event = m.web_cpu / max(1, m.received) * 1e6
    target, met = "-", "info"
    if per_event_target_us is not None:
        target, met = f"<= {per_event_target_us:.0f} us", verdict(per_event <= per_event_target_us)
    ours = m.web_cpu + m.client_cpu + m.redis_cpu + m.publisher_cpu
    wall = m.wall
    return [
        Row(
            part,
            f"web CPU per relayed event ({m.workers})",
            f"{per_event:.0f} us",
            "-",
            f"{m.received / wall:.0f} events/s need {m.web_cpu / wall:.2f} of a core",
            target,
            met,
        ),
        Row(
            part,
            "CPU while streaming",
            f"web {100 * m.web_cpu / wall:.0f}% of a core",
            "-",
            f"client {100 * m.client_cpu / wall:.0f}%, publishers "
            f"{100 * m.publisher_cpu / wall:.0f}%, redis {100 * m.redis_cpu / wall:.0f}%",
            "-",
            "info",
        ),
        Row(
            part,
            "machine CPU busy while streaming",
            f"{m.machine_busy / wall:.2f} of {m.machine_total / wall:.0f} cores",
            "-",
            f"this bench {ours / wall:.2f}, other work {(m.machine_busy - ours) / wall:.2f}",
            "-",
            "info",
        ),
        Row(
            part,
            "web waited for a core while runnable",
            f"{m.web_waited:.2f} s",
            f"{m.web_cpu:.2f} s running",
            f"{100 * m.web_waited / wall:.0f}% of the wall time, summed over its threads",
            "-",
            "info",
        ),
        Row(part, "publisher schedule slip (worst)", ms(m.slip_ns), "-", "", "-", "info"),
    ]


def part_fanout(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    m = fanout(redis_url, plan, logdir, Load(plan.streams, plan.rate, plan.seconds), "3")
    return [
        *delivery_rows("3", m),
        *lag_rows("3", m, 250e6),
        *cpu_rows("3", m, 25.0),
        rss_row("3", m, None),
    ]


def part_width(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    m = fanout(redis_url, plan, logdir, Load(plan.wide_streams, 1, plan.wide_seconds), "4")
    return [
        *delivery_rows("4", m),
        rss_row("4", m, 1024),
        *lag_rows("4", m, None),
        *cpu_rows("4", m, None),
    ]


# part 5: Redis memory per stored event -------------------------------------------------


def used_memory(client: redis.Redis) -> int:
    return int(cast(dict[str, Any], client.info("memory"))["used_memory"])


def key_bytes(client: redis.Redis, keys: Sequence[str]) -> int:
    """MEMORY USAGE of the keys, every element counted (SAMPLES 0)."""
    return sum(int(cast(int, client.memory_usage(key, samples=0) or 0)) for key in keys)


def part_memory(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    client = redis.Redis.from_url(redis_url)
    data_json = encode_json(TYPICAL_DELTA)
    per, events = min(SEGMENT_EVENTS, plan.stored_events), plan.stored_events
    segments = [Segment(f"memory-{i}", new_segment_id()) for i in range(-(-events // per))]
    bare_keys = [f"relayline:bench:bare:{uuid.uuid4().hex}" for _ in segments]
    keys = [log_key(s.segment_id) for s in segments]
    size = len(encode_envelope(segments[0].segment_id, per - 1, "text", data_json))
    try:
        before = used_memory(client)
        for index, segment in enumerate(segments):
            log = segment_log(client, segment)
            for seq in range(min(per, events - index * per)):
                log.append(encode_envelope(segment.segment_id, seq, "text", data_json))
            finish_log(log)  # a running segment: no terminal, nothing left pending
        logged = used_memory(client) - before
        logged_exact = key_bytes(client, keys)

        before = used_memory(client)
        for index, (segment, key) in enumerate(zip(segments, bare_keys, strict=True)):
            pipe = client.pipeline(transaction=False)  # pipelined: memory, not speed
            for seq in range(min(per, events - index * per)):
                envelope = encode_envelope(segment.segment_id, seq, "text", data_json)
                pipe.xadd(key, {FIELD: envelope})
            pipe.execute()
        bare = used_memory(client) - before
        bare_exact = key_bytes(client, bare_keys)
    finally:
        for segment in segments:
            forget_thread(client, segment.thread_id)
        for key in bare_keys:
            client.delete(key)
        client.close()
    label = f"{events} text deltas of {size} bytes, {len(segments)} segment(s)"
    return [
        Row(
            "5",
            f"Redis used_memory per event ({label})",
            f"{logged / events:.0f} B",
            f"{bare / events:.0f} B bare XADD",
            f"{logged / bare:.2f}x" if bare > 0 else "-",
            "-",
            "info",
        ),
        Row(
            "5",
            "MEMORY USAGE of the keys per event (other tenants cannot move it)",
            f"{logged_exact / events:.0f} B",
            f"{bare_exact / events:.0f} B bare XADD",
            f"{logged_exact / bare_exact:.2f}x; the envelope itself {size} B",
            "-",
            "info",
        ),
    ]


# part 6: one turn of many chunks -------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Flood:
    """A turn's text events as a client saw them: how many, the text, and the times of
    the first and last (nanoseconds)."""

    events: int
    text: str
    first: int
    last: int

    @property
    def per_second(self) -> float:
        return (self.events - 1) / max(1e-9, (self.last - self.first) / 1e9)


def flood_turn(port: int, thread: str, chunks: int) -> Flood:
    from bench.relay_agent import message

    body = json.dumps({"content": message(chunks)}).encode()
    request = (
        f"POST /api/threads/{thread}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    decoder = SSEDecoder()
    parts: list[str] = []
    first = last = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        while not decoder.done and (data := sock.recv(262144)):
            now = time.perf_counter_ns()
            for frame in decoder.feed(data):
                event = json.loads(frame)
                if event["type"] == "text":
                    parts.append(event["content"])
                    first, last = first or now, now
    if decoder.status != 200 or not decoder.done:
        raise RuntimeError(f"flood turn on {thread}: status {decoder.status}")
    return Flood(len(parts), "".join(parts), first, last)


def flood_in_process(spec: Any, store: Store, thread: str, chunks: int) -> Flood:
    from bench.relay_agent import message
    from relayline.shared.agent import Agent
    from relayline.shared.protocols import adapter_factory

    agent = Agent(thread, spec, store)
    agent.set_stream_adapter(adapter_factory("native", thread, {}))
    parts: list[str] = []
    first = last = 0
    for item in agent.stream(message(chunks)):
        if isinstance(item, ProtocolEvent) and item.type == "text":
            now = time.perf_counter_ns()
            parts.append(str(item.data["content"]))
            first, last = first or now, now
    return Flood(len(parts), "".join(parts), first, last)


def part_flood(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    from bench.relay_agent import answer, build
    from tests.support.stack import Worker, stack_env

    database_url = f"sqlite:///{logdir / 'stack.db'}"
    Store(database_url).dispose()  # migrated before the worker touches it
    env = {**stack_env(redis_url, database_url, logdir), "RELAYLINE_AGENT": FLOOD_AGENT}
    env["RELAYLINE_AUTH"] = "none"
    chunks, run = plan.flood_chunks, uuid.uuid4().hex[:12]
    worker = Worker(env, "bench-flood")
    try:
        with gunicorn(env, logdir) as server:
            flood_turn(server.port, f"flood-warm-{run}", FLOOD_WARMUP)
            time.sleep(IDLE_GAP)
            pids = [*server.workers, worker.process.pid, *worker.child_pids()]
            cpu = cpu_seconds(pids)
            remote = flood_turn(server.port, f"flood-{run}", chunks)
            cpu = cpu_seconds(pids) - cpu
    finally:
        worker.stop()
    store = Store(f"sqlite:///{logdir / 'inprocess.db'}")
    try:
        spec = build()
        flood_in_process(spec, store, f"flood-local-warm-{run}", FLOOD_WARMUP)
        local = flood_in_process(spec, store, f"flood-local-{run}", chunks)
    finally:
        store.dispose()
    expected = answer(chunks)
    whole = remote.events == chunks and remote.text == expected
    if local.events != chunks or local.text != expected:
        raise RuntimeError(f"in-process turn: {local.events} events, not {chunks}")
    label = f"one turn of {chunks} chunks, first to last text event"
    return [
        Row(
            "6",
            f"{label}: events/s",
            f"{remote.per_second:,.0f}/s",
            f"{local.per_second:,.0f}/s in-process",
            f"{remote.per_second / local.per_second:.2f}x; "
            f"{(remote.last - remote.first) / 1e9:.2f} s",
            ">= 20,000/s",
            verdict(remote.per_second >= 20_000),
        ),
        Row(
            "6",
            f"{label}: every chunk once, in order",
            f"{remote.events}/{chunks}",
            f"{chunks}",
            "text intact" if remote.text == expected else "text differs",
            "all",
            verdict(whole),
        ),
        Row(
            "6",
            "web + worker CPU per chunk",
            f"{cpu / chunks * 1e6:.0f} us",
            "-",
            f"{cpu:.2f} s for the turn",
            "-",
            "info",
        ),
    ]


# main -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes")
    parser.add_argument("--part", type=int, choices=range(1, 7), help="run only this part")
    parser.add_argument("--streams", type=int, help="part 3 streams (default 1000)")
    parser.add_argument("--seconds", type=int, help="part 3 seconds (default 30)")
    parser.add_argument(
        "--publishers", type=int, default=2, help="parts 3 and 4: publisher processes"
    )
    parser.add_argument(
        "--web-workers",
        type=int,
        help="experiment: parts 3 and 4 on this many gunicorn workers instead of web_command's",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    plan = dataclasses.replace(
        plan,
        streams=args.streams or plan.streams,
        seconds=args.seconds or plan.seconds,
        publishers=args.publishers,
        web_workers=args.web_workers,
    )
    parts: dict[int, Callable[[str, Plan, Path], list[Row]]] = {
        1: part_latency,
        2: part_dispatch,
        3: part_fanout,
        4: part_width,
        5: part_memory,
        6: part_flood,
    }
    rows: list[Row] = []
    sys.path.insert(0, str(ROOT))  # tests.support and bench are not installed packages
    raise_open_files()
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp, redis_database() as url:
        for number, run in parts.items():
            if args.part not in (None, number):
                continue
            logdir = Path(tmp) / f"part{number}"
            logdir.mkdir()
            started = time.monotonic()
            try:
                found = run(url, plan, logdir)
            except Exception as exc:
                traceback.print_exc()
                found = [Row(str(number), "part crashed", repr(exc)[:80], "-", "-", "-", "MISSED")]
            print_table(found, f"part {number} ({time.monotonic() - started:.0f} s)")
            rows += found
    setup = "quick" if args.quick else "full size"
    if plan.web_workers is not None:
        setup += (
            f"; EXPERIMENT: parts 3 and 4 on {plan.web_workers} gunicorn workers, not web_command's"
        )
    print_table(rows, f"summary ({setup})")
    missed = [r for r in rows if r.verdict == "MISSED"]
    print(f"\n{len(missed)} target(s) missed" + (": see <<< MISSED above" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
