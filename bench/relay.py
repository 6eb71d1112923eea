"""The Redis relay, measured against baselines taken in the same run.

    .venv/bin/python bench/relay.py              # all three parts at full size
    .venv/bin/python bench/relay.py --quick      # smoke sizes (100 streams x 5 s, ...)
    .venv/bin/python bench/relay.py --part 3     # one part

1. Relay latency: a RedisChannel publish (real envelope) to the SSE frame at an HTTP
   client of the production relay body (bench/relay_app.py: ``web.dispatch._relayed``
   under ``relayline.cli.web_command``'s gunicorn gevent worker), against a bare redis-py
   PUBLISH of the same bytes to a Pub/Sub subscriber, alternated message by message.
   Target: p50 within 2 ms of the baseline.
2. Dispatch overhead: POST /api/threads/<new id>/messages {"content": "hello"} to the
   first SSE body byte, against the real stack (one Celery worker process, idle, and the
   production web server), against the same turn in-process (``Agent.stream`` with the
   same test agent, a SQLite store and the native adapter) to its first item.
   Target: p50 overhead at most 5 ms (was 20 ms; the code-shape issue set 5).
3. Fan-out: 1,000 relayed SSE streams held by one asyncio client, each fed 10 events a
   second for 30 seconds by publisher processes standing in for workers (RedisChannel,
   real envelopes, PUBLISH pipelined per tick). Every event must arrive, in order; p99
   lag at most 250 ms; the gunicorn worker's RSS at most 500 MB. The lag baseline is a
   bare Redis subscriber on 10 of the same channels in the same client loop: the floor
   the publishers, Redis and this client impose without the web relay. Also printed:
   lag by arrival time, the web worker's CPU per relayed event, and how busy the whole
   machine was (other work on a shared 2-core machine starves a one-process server).

Options: ``--streams``/``--seconds`` resize part 3, ``--publishers N`` splits the stand-in
workers over N processes, ``--web-workers N`` is an experiment (part 3 on N gunicorn
workers instead of web_command's one), labelled as such in the summary.

Redis: tests.support.redis_server (local 127.0.0.1:6379, else an embedded one),
database 15 (BENCH_DB, which the tests never hand out) held through the tests'
RedisDatabases: empty at the start, flushed after. Every process started here is
stopped by PID. Prints a table; exits 0 whatever it measured (a measurement, not a test).
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

from channels import RedisChannel
from channels.envelope import encode_envelope
from relayline.cli import web_command
from shared.events import ProtocolEvent

ROOT = Path(__file__).resolve().parents[1]
TICK = "bench.tick"
RELAY_APP = "bench.relay_app:app"
PRODUCTION_APP = "web.wsgi:app"


@dataclasses.dataclass(frozen=True)
class Plan:
    latency_messages: int
    dispatch_turns: int
    streams: int
    seconds: int
    rate: int  # events per second per stream
    publishers: int = 1
    #: None: web_command's own worker count (production); a number is an experiment
    web_workers: int | None = None


FULL = Plan(latency_messages=2000, dispatch_turns=50, streams=1000, seconds=30, rate=10)
QUICK = Plan(latency_messages=200, dispatch_turns=10, streams=100, seconds=5, rate=10)
LATENCY_WARMUP = 100
DISPATCH_WARMUP = 5
#: pause between turns, so each POST finds the worker idle (its last task acked)
IDLE_GAP = 0.1
#: publishers sleep at least this long per tick, so PUBLISHes pipeline in batches
MIN_NAP = 0.002


@dataclasses.dataclass(frozen=True)
class Row:
    part: str
    measurement: str
    value: str
    baseline: str
    compare: str
    target: str
    verdict: str  # PASS, FAIL or info


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_table(rows: Sequence[Row], title: str) -> None:
    header = Row("part", "measurement", "value", "baseline", "vs baseline", "target", "verdict")
    cells = [dataclasses.astuple(r) for r in (header, *rows)]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(cells[0]))]
    line = "  ".join("-" * w for w in widths)
    print(f"\n{title}\n{line}")
    for index, row in enumerate(cells):
        text = "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        print(text.rstrip() + ("   <<< MISSED" if row[-1] == "FAIL" else ""))
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
    app: str, env: dict[str, str], logdir: Path, ping: str, workers: int | None = None
) -> Iterator[Server]:
    """``relayline web``'s exact gunicorn command, serving ``app`` on a free port;
    ``workers`` overrides its worker count (an experiment, reported as such)."""
    port = free_port()
    command = web_command("127.0.0.1", port)
    command[command.index(PRODUCTION_APP)] = app
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
                    if len(pids) == expected and http_get(port, ping) == 200:
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


def relay_env(redis_url: str) -> dict[str, str]:
    return {**os.environ, "REDIS_URL": redis_url, "PYTHONPATH": str(ROOT)}


def relay_name() -> str:
    return f"relayline:relay:bench{uuid.uuid4().hex}"


def wait_subscribed(
    client: redis.Redis, names: Sequence[str], at_least: int = 1, timeout: float = 60.0
) -> None:
    """Until every channel has ``at_least`` exact subscribers (PUBSUB NUMSUB)."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        counts: list[tuple[Any, int]] = []
        for start in range(0, len(pending), 500):
            counts += cast(
                list[tuple[Any, int]], client.pubsub_numsub(*pending[start : start + 500])
            )
        pending = [n for n, (_, c) in zip(pending, counts, strict=True) if int(c) < at_least]
        if pending and time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} channels never got a subscriber")
        if pending:
            time.sleep(0.05)  # the server is still accepting connections; bounded above


@dataclasses.dataclass(frozen=True)
class Finished:
    """The segment state a channel terminal reads (only the thread id)."""

    thread_id: str


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
            # A native frame may lead with its cursor (``id: <sequence>``).
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


def part_latency(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    client = redis.Redis.from_url(redis_url)
    bare = client.pubsub()  # type: ignore[no-untyped-call]
    with gunicorn(RELAY_APP, relay_env(redis_url), logdir, "/bench/ping") as server:
        bare_name = f"bench:bare:{uuid.uuid4().hex}"
        bare.subscribe(bare_name)
        while (message := bare.get_message(timeout=10)) is None or message["type"] != "subscribe":
            pass
        name = relay_name()
        stream = BlockingSSE(server.port, f"/bench/relay/{name}")
        wait_subscribed(client, [name])
        channel = RedisChannel(client, name, await_listener=5.0)
        bare_ns: list[int] = []
        relay_ns: list[int] = []
        # Alternated message by message, so that any noise hits both paths alike.
        for seq in range(LATENCY_WARMUP + plan.latency_messages):
            sent = time.perf_counter_ns()
            data = f'{{"seq":{seq},"t":{sent}}}'  # the relay's envelope bytes, verbatim
            client.publish(bare_name, encode_envelope(channel.stream_id, seq, TICK, data))
            while (message := bare.get_message(timeout=10)) is None or message["type"] != "message":
                if message is None:
                    raise RuntimeError("the bare subscriber heard nothing for 10 s")
            got = json.loads(message["data"])["data"]
            arrived = time.perf_counter_ns()
            if got["seq"] != seq:
                raise RuntimeError(f"bare subscriber: expected {seq}, got {got['seq']}")

            channel.send(ProtocolEvent(TICK, {"seq": seq, "t": time.perf_counter_ns()}))
            event = stream.next_event()
            relayed = time.perf_counter_ns()
            if event.get("type") != TICK or event.get("seq") != seq:
                raise RuntimeError(f"relay: expected tick {seq}, got {event}")
            if seq >= LATENCY_WARMUP:
                bare_ns.append(arrived - got["t"])
                relay_ns.append(relayed - event["t"])
        channel.completed(Finished("bench"), "bench")
        stream.read_to_end()
        stream.close()
    bare.close()
    client.close()
    bare_ns.sort()
    relay_ns.sort()
    p50, base50 = percentile(relay_ns, 0.5), percentile(bare_ns, 0.5)
    label = f"publish -> SSE bytes ({plan.latency_messages} msgs)"
    return [
        Row(
            "1",
            f"{label} p50",
            ms(p50),
            ms(base50),
            f"+{ms(p50 - base50)} ({p50 / base50:.2f}x)",
            "<= +2 ms",
            verdict(p50 - base50 <= 2e6),
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
    from shared.agent import Agent
    from shared.persistence import Store
    from shared.protocols import adapter_factory
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
        with gunicorn(PRODUCTION_APP, env, logdir, "/healthz") as server:
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


# part 3: fan-out ------------------------------------------------------------------------


class PipelinedPublisher:
    """Stands in for a worker's ``redis.Redis`` inside RedisChannel. PUBLISH goes on a
    pipeline executed once per tick, so that one process can stand in for 1,000 workers
    on a 2-core machine; the envelopes and the channel logic stay RedisChannel's own."""

    def __init__(self, client: redis.Redis, names: Sequence[str]) -> None:
        self.client = client
        self.pipe = client.pipeline(transaction=False)
        self.published = 0
        self.unheard = 0  # PUBLISH replies of 0 receivers: lost before the relay
        # await_listener asks NUMSUB once per channel: answer from one bulk query made
        # before the clock starts instead of 1,000 round trips in the first tick.
        counts = cast(list[tuple[Any, int]], client.pubsub_numsub(*names))
        self.numsub = {n: int(c) for n, (_, c) in zip(names, counts, strict=True)}

    def publish(self, name: str, message: str) -> int:
        self.pipe.publish(name, message)
        return 0

    def pubsub_numsub(self, *names: str) -> list[tuple[str, int]]:
        if all(self.numsub.get(n, 0) >= 1 for n in names):
            return [(n, self.numsub[n]) for n in names]
        return cast(list[tuple[str, int]], self.client.pubsub_numsub(*names))

    def flush(self) -> None:
        replies = self.pipe.execute()
        self.published += len(replies)
        self.unheard += sum(1 for r in replies if r == 0)


def publish_streams(
    redis_url: str,
    names: list[str],
    rate: int,
    count: int,
    ready: Queue[Any],
    go: MPEvent,
    start: Synchronized[int],
) -> None:
    """A publisher process: ``count`` events per stream at ``rate`` a second, streams
    staggered evenly over the period, each event stamped with its send time."""
    client = redis.Redis.from_url(redis_url)
    sink = PipelinedPublisher(client, names)
    channels = [RedisChannel(cast(redis.Redis, sink), name, await_listener=5.0) for name in names]
    ready.put(("ready", os.getpid()))
    if not go.wait(timeout=120):
        return
    begin, streams = start.value, len(names)
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
            channels[i].send(ProtocolEvent(TICK, {"seq": k, "t": time.monotonic_ns()}))
            sent += 1
        sink.flush()
        if sent < total:
            k, i = divmod(sent, streams)
            due = begin + k * period + i * period // streams
            time.sleep(max(MIN_NAP, (due - time.monotonic_ns()) / 1e9))
    for channel in channels:
        channel.completed(Finished("bench"), "bench")
    sink.flush()
    ready.put(
        (
            "done",
            {
                "published": sink.published,
                "unheard": sink.unheard,
                "worst_slip_ns": worst_slip,
                "cpu": time.process_time() - started_cpu,
            },
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
    """One relayed SSE stream: checks order, records the lag of every event."""

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


class FloorSubscriber(asyncio.Protocol):
    """A bare RESP SUBSCRIBE to a few of the same channels, read in the same loop as the
    SSE streams: the lag that publishers, Redis and this client cause by themselves."""

    TIMES = re.compile(rb'"seq":(\d+),"t":(\d+)\}')

    def __init__(self, names: Sequence[str], password: str | None, run: Fanout) -> None:
        parts: list[bytes] = []
        if password:
            parts.append(resp_command("AUTH", password))
        parts.append(resp_command("SUBSCRIBE", *names))
        self.request = b"".join(parts)
        self.buffer = bytearray()
        self.run = run

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.Transport, transport).write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        self.buffer += data
        end = 0
        for match in self.TIMES.finditer(self.buffer):
            self.run.floor.append(now - int(match[2]))
            end = match.end()
        del self.buffer[:end]


def redis_cpu_seconds(client: redis.Redis) -> float:
    """The Redis server's CPU seconds, when it runs on this machine (else 0)."""
    info = cast(dict[str, Any], client.info("cpu"))
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def print_timeline(run: Fanout, begin: int, seconds: int) -> None:
    """Lag by arrival time: a backlog that grows, a burst at the start, or steady noise."""
    step = max(1, seconds // 6)
    buckets: dict[int, list[int]] = {}
    for arrived, lag in zip(run.arrivals, run.lags, strict=True):
        buckets.setdefault(max(0, arrived - begin) // (step * 1_000_000_000), []).append(lag)
    print(f"\npart 3 lag by arrival time ({step} s windows)")
    for index in sorted(buckets):
        lags = sorted(buckets[index])
        print(
            f"  {index * step:3d}-{(index + 1) * step:3d} s: {len(lags):7d} events  "
            f"p50 {ms(percentile(lags, 0.5)):>10}  p99 {ms(percentile(lags, 0.99)):>10}  "
            f"max {ms(lags[-1]):>10}"
        )


def resp_command(*words: str) -> bytes:
    out = [f"*{len(words)}\r\n".encode()]
    for word in words:
        raw = word.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def part_fanout(redis_url: str, plan: Plan, logdir: Path) -> list[Row]:
    with gunicorn(
        RELAY_APP, relay_env(redis_url), logdir, "/bench/ping", plan.web_workers
    ) as server:
        return asyncio.run(_fanout(redis_url, plan, server))


async def _fanout(redis_url: str, plan: Plan, server: Server) -> list[Row]:
    publishers = plan.publishers
    loop = asyncio.get_running_loop()
    client = redis.Redis.from_url(redis_url)
    run = Fanout(all_ended=loop.create_future())
    idle_kb = total_kb(server.workers, "VmRSS")
    names = [relay_name() for _ in range(plan.streams)]
    streams: list[StreamClient] = []
    for start in range(0, len(names), 100):  # in waves: gentle on the accept backlog
        batch = names[start : start + 100]
        made = await asyncio.gather(
            *(
                loop.create_connection(
                    lambda n=n: StreamClient(f"/bench/relay/{n}", run),  # type: ignore[misc]
                    "127.0.0.1",
                    server.port,
                )
                for n in batch
            )
        )
        streams += [protocol for _, protocol in made]
    run.open = len(streams)
    await asyncio.to_thread(wait_subscribed, client, names)
    connected_kb = total_kb(server.workers, "VmRSS")

    sample = names[:: max(1, len(names) // 10)][:10]
    options = client.connection_pool.connection_kwargs
    floor_transport, _ = await loop.create_connection(
        lambda: FloorSubscriber(sample, options.get("password"), run),
        options.get("host", "127.0.0.1"),
        options.get("port", 6379),
    )
    await asyncio.to_thread(wait_subscribed, client, sample, 2)

    context = multiprocessing.get_context("spawn")
    ready: Queue[Any] = context.Queue()
    go = context.Event()
    begin = cast("Synchronized[int]", context.Value("q", 0))
    processes = [
        context.Process(
            target=publish_streams,
            args=(redis_url, names[k::publishers], plan.rate, plan.rate * plan.seconds),
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
        client_cpu, redis_cpu = time.process_time(), redis_cpu_seconds(client)
        machine_busy, machine_total = machine_cpu()
        deadline = wall + 0.2 + plan.seconds + 60
        all_ended = run.all_ended
        assert all_ended is not None
        while not all_ended.done() and time.monotonic() < deadline:
            rss_samples.append(total_kb(server.workers, "VmRSS"))
            await asyncio.wait({all_ended}, timeout=0.25)
        web_cpu = cpu_seconds(server.workers) - web_cpu
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
        floor_transport.close()
        for stream in streams:
            if stream.transport is not None and not stream.ended:
                stream.transport.close()
        client.close()

    expected = plan.rate * plan.seconds
    total = expected * len(streams)
    received = sum(s.received for s in streams)
    disorder = sum(s.disorder for s in streams)
    foreign = sum(s.foreign for s in streams)
    unclean = sum(1 for s in streams if not s.clean)
    short = sum(1 for s in streams if s.received != expected)
    unheard = sum(r["unheard"] for r in reports)
    lags = sorted(run.lags)
    floor = sorted(run.floor)
    p99, floor99 = percentile(lags, 0.99), percentile(floor, 0.99) if floor else 0
    p50, floor50 = percentile(lags, 0.5), percentile(floor, 0.5) if floor else 0
    delivered_ok = received == total and not (disorder or foreign or unclean or short or unheard)
    label = f"{len(streams)} streams x {plan.rate}/s x {plan.seconds} s"
    slip = max(r["worst_slip_ns"] for r in reports)
    workers = f"{len(server.workers)} gunicorn worker" + ("s" if len(server.workers) > 1 else "")
    ours = web_cpu + client_cpu + redis_cpu + sum(r["cpu"] for r in reports)
    cores = machine_total / wall
    print_timeline(run, begin.value, plan.seconds)
    return [
        Row(
            "3",
            f"{label}: events delivered in order",
            f"{received}/{total}",
            f"{total}",
            f"lost {total - received}, out of order {disorder}, error frames {foreign}",
            "zero loss",
            verdict(delivered_ok),
        ),
        Row(
            "3",
            f"{label}: streams ended cleanly",
            f"{len(streams) - unclean}/{len(streams)}",
            f"{len(streams)}",
            f"short {short}, published to no one {unheard}",
            "all",
            verdict(unclean == 0 and short == 0),
        ),
        Row("3", f"{label}: lag p50", ms(p50), ms(floor50), f"+{ms(p50 - floor50)}", "-", "info"),
        Row(
            "3",
            f"{label}: lag p99",
            ms(p99),
            ms(floor99),
            f"+{ms(p99 - floor99)}",
            "<= 250 ms",
            verdict(p99 <= 250e6),
        ),
        Row("3", f"{label}: lag max", ms(lags[-1]), ms(floor[-1] if floor else 0), "", "-", "info"),
        Row(
            "3",
            f"web RSS peak ({workers})",
            f"{peak_kb / 1024:.0f} MB",
            f"{idle_kb / 1024:.0f} MB idle",
            f"+{(peak_kb - idle_kb) / 1024:.0f} MB "
            f"({(connected_kb - idle_kb) / len(streams):.0f} kB/stream connected)",
            "<= 500 MB",
            verdict(peak_kb <= 500 * 1024),
        ),
        Row(
            "3",
            f"web CPU while streaming ({workers})",
            f"{100 * web_cpu / wall:.0f}% of a core",
            "-",
            f"client {100 * client_cpu / wall:.0f}%, publishers "
            f"{100 * sum(r['cpu'] for r in reports) / wall:.0f}%, "
            f"redis {100 * redis_cpu / wall:.0f}%",
            "-",
            "info",
        ),
        Row(
            "3",
            "web CPU per relayed event",
            f"{web_cpu / max(1, received) * 1e6:.0f} us",
            "-",
            f"{received / wall:.0f} events/s need {web_cpu / wall:.2f} of a core",
            "-",
            "info",
        ),
        Row(
            "3",
            "machine CPU busy while streaming",
            f"{machine_busy / wall:.2f} of {cores:.0f} cores",
            "-",
            f"this bench {ours / wall:.2f}, other work {(machine_busy - ours) / wall:.2f}",
            "-",
            "info",
        ),
        Row(
            "3",
            "publisher schedule slip (worst)",
            ms(slip),
            "-",
            f"{publishers} publisher process(es)",
            "-",
            "info",
        ),
    ]


# main -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes")
    parser.add_argument("--part", type=int, choices=(1, 2, 3), help="run only this part")
    parser.add_argument("--streams", type=int, help="part 3 streams (default 1000)")
    parser.add_argument("--seconds", type=int, help="part 3 seconds (default 30)")
    parser.add_argument("--publishers", type=int, default=1, help="part 3 publisher processes")
    parser.add_argument(
        "--web-workers",
        type=int,
        help="experiment: part 3 with this many gunicorn workers instead of web_command's",
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
    }
    rows: list[Row] = []
    sys.path.insert(0, str(ROOT))  # tests.support is not an installed package
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
                found = [Row(str(number), "part crashed", repr(exc)[:80], "-", "-", "-", "FAIL")]
            print_table(found, f"part {number} ({time.monotonic() - started:.0f} s)")
            rows += found
    setup = "quick" if args.quick else "full size"
    if plan.web_workers is not None:
        setup += f"; EXPERIMENT: part 3 on {plan.web_workers} gunicorn workers, not web_command's"
    print_table(rows, f"summary ({setup})")
    missed = [r for r in rows if r.verdict == "FAIL"]
    print(f"\n{len(missed)} target(s) missed" + (": see <<< MISSED above" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
