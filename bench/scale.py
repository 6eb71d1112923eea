"""Scale: many concurrent turns on few worker processes, and the fixed cost of a turn.

    .venv/bin/python bench/scale.py --done-when          # the issue's done-when parts
    .venv/bin/python bench/scale.py --matrix             # the whole matrix (slow)
    .venv/bin/python bench/scale.py --turns 1,10,100 --workers 1,2 --db sqlite \\
        --broker redis --webs 1 --seconds 3               # any part of it

Each configuration starts the real stack: N worker processes exactly as ``relayline
worker`` runs them (the gevent pool; RELAYLINE_WORKER_CONCURRENCY is raised to the
number of concurrent turns when that is larger, and the tables say so), the production
web server (``relayline web``'s gunicorn gevent command, with 1 or 2 worker processes),
on SQLite or PostgreSQL, with Redis or RabbitMQ as the broker. The agent
(bench/scale_agent.py) calls one backend tool, then streams 100 chunks over 3 s (or 5 s)
like a real model. A client opens every turn at once (POST /api/threads/<id>/messages,
native SSE) and reads each to its end.

Per configuration: turns/s (turns over the wall time from the first POST to the last
byte), first-byte p50/p99 (POST to the first SSE event), last-byte p99, CPU per turn
(user + system CPU of the worker and web processes over the run, less what they burn
idle over the same time, per turn), memory per in-flight turn (peak RSS of the worker
processes less their idle RSS, over the turns in flight at once).

The fixed cost: ``quiet`` turns (no tool, one 5-character answer: a turn that streams
nothing), 10 at a time, CPU of web and worker per turn against the 10 ms target.

Done when (one worker process, this 2-core machine): 500 concurrent 3-second turns, no
error, first-byte p99 at most 1 s; 40 concurrent 5-second turns within 12 s; fixed CPU
per turn against 10 ms; memory per in-flight turn against 1 MB.

Writes docs/scale.json (every figure) and docs/scale.png (throughput against worker
processes; first-byte latency against concurrent turns). Redis database 15 (bench/relay.py's
BENCH_DB), PostgreSQL databases of its own, RabbitMQ virtual hosts of its own; every
process it starts is stopped by PID. Exits 0 whatever it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from relay import (
    ROOT,
    Row,
    cpu_seconds,
    gunicorn,
    machine_cpu,
    percentile,
    print_table,
    redis_database,
    stop_process,
    total_kb,
    verdict,
)

from relayline.cli import worker_command, worker_env
from relayline.shared.settings import Settings

DOCS = ROOT / "docs"
AGENT = "bench.scale_agent:build"
#: the floor's Flask and Celery apps (bench/scale_floor.py)
FLOOR = "bench.scale_floor"
#: the done-when targets
FIRST_BYTE_P99_TARGET = 1.0
FIVE_SECOND_WALL_TARGET = 12.0
FIXED_CPU_TARGET_MS = 10.0
MEMORY_TARGET_KB = 1024.0
#: the default concurrency of ``relayline worker`` (raised when a run needs more slots)
DEFAULT_CONCURRENCY = 64
#: the worker pool (``--pool``): gevent as relayline runs it, or threads to compare
POOL = [Settings.worker_pool]
#: idle seconds measured before a run (the processes' CPU and memory at rest)
IDLE_SECONDS = 3.0
#: quiet turns for the fixed cost, and how many at a time
QUIET_TURNS = 200
QUIET_AT_ONCE = 10
#: turns the floor posts at once (the done-when burst)
FLOOR_TURNS = 500


@dataclasses.dataclass(frozen=True)
class Config:
    workers: int
    webs: int
    db: str  # sqlite | postgres
    broker: str  # redis | rabbitmq
    turns: int
    seconds: float  # 3 or 5: the pace of the answer


@dataclasses.dataclass(frozen=True)
class Result:
    config: Config
    concurrency: int
    ok: int
    failed: int
    wall: float
    turns_per_second: float
    first_p50: float
    first_p99: float
    last_p99: float
    cpu_per_turn_ms: float
    worker_cpu_per_turn_ms: float
    memory_per_turn_kb: float


# the stack -------------------------------------------------------------------------


@dataclasses.dataclass
class Workers:
    processes: list[subprocess.Popen[bytes]]

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]


@contextlib.contextmanager
def workers(
    env: dict[str, str], count: int, concurrency: int, logdir: Path, app: str | None = None
) -> Iterator[Workers]:
    """``count`` worker processes as ``relayline worker`` runs them (``app``: another
    Celery app on the same command, a baseline's)."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for index in range(count):
            log = logdir / f"worker-{index}-{uuid.uuid4().hex[:6]}.log"
            command = [*worker_command(POOL[0], concurrency), "-n", f"bench{index}@%h"]
            if app is not None:
                command[command.index("relayline.worker.app")] = app
            command += ["--without-gossip", "--without-mingle"]
            with log.open("w") as handle:
                started.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env=worker_env(POOL[0], concurrency, env),
                        stdout=handle,
                        stderr=subprocess.STDOUT,
                    )
                )
            logs.append(log)
        deadline = time.monotonic() + 60
        while not all(" ready." in log.read_text() for log in logs):
            for process, log in zip(started, logs, strict=True):
                if process.poll() is not None:
                    raise RuntimeError(f"worker exited: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("workers not ready within 60 s")
            time.sleep(0.1)  # polling the workers' logs, bounded by the deadline
        yield Workers(started)
    finally:
        for process in started:
            stop_process(process)


@contextlib.contextmanager
def database(kind: str, logdir: Path) -> Iterator[str]:
    from relayline.shared.persistence import Store

    if kind == "sqlite":
        url = f"sqlite:///{logdir / f'scale-{uuid.uuid4().hex[:6]}.db'}"
        Store(url).dispose()
        yield url
        return
    from tests.support.postgres import fresh_database, postgres_server

    with postgres_server() as admin, fresh_database(admin) as url:
        Store(url).dispose()
        yield url


@contextlib.contextmanager
def broker(kind: str, redis_url: str) -> Iterator[str]:
    if kind == "redis":
        yield redis_url
        return
    from tests.support.rabbitmq import rabbitmq_vhost

    with rabbitmq_vhost() as url:
        yield url


# the client ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timing:
    first: float  # seconds from POST to the first SSE event
    last: float  # seconds from POST to the end of the response
    ok: bool


async def one_turn(port: int, thread: str, text: str) -> Timing:
    body = json.dumps({"content": text}).encode()
    request = (
        f"POST /api/threads/{thread}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    sent = time.perf_counter()
    first: float | None = None
    received = bytearray()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        writer.write(request)
        while chunk := await reader.read(65536):
            received += chunk
            if first is None and b"data: " in received:
                first = time.perf_counter() - sent
        writer.close()
    except OSError:
        return Timing(0.0, time.perf_counter() - sent, False)
    last = time.perf_counter() - sent
    ok = received.startswith(b"HTTP/1.1 200") and b'"[end]"' in received
    ok = ok and b'"type":"error"' not in received
    return Timing(first if first is not None else last, last, ok)


async def many_turns(port: int, texts: Sequence[str], at_once: int) -> list[Timing]:
    gate = asyncio.Semaphore(at_once)
    prefix = uuid.uuid4().hex[:8]

    async def bounded(index: int, text: str) -> Timing:
        async with gate:
            return await one_turn(port, f"scale-{prefix}-{index}", text)

    return await asyncio.gather(*(bounded(i, t) for i, t in enumerate(texts)))


class PeakRSS:
    """Samples the summed RSS of processes every 0.1 s in a thread; ``peak`` in kB."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, total_kb(self.pids, "VmRSS"))

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclasses.dataclass(frozen=True)
class Load:
    timings: list[Timing]
    wall: float
    cpu: float  # CPU seconds of the measured processes, less their idle rate
    worker_cpu: float  # the same, of the worker processes alone
    memory_kb: float  # peak RSS of the workers above idle


def measure(
    port: int, worker_pids: list[int], pids: list[int], texts: list[str], at_once: int
) -> Load:
    idle_cpu, idle_worker = cpu_seconds(pids), cpu_seconds(worker_pids)
    time.sleep(IDLE_SECONDS)  # the processes at rest: their sweeper, heartbeats, polls
    idle_rate = (cpu_seconds(pids) - idle_cpu) / IDLE_SECONDS
    idle_worker_rate = (cpu_seconds(worker_pids) - idle_worker) / IDLE_SECONDS
    idle_rss = total_kb(worker_pids, "VmRSS")
    before, before_worker = cpu_seconds(pids), cpu_seconds(worker_pids)
    started = time.perf_counter()
    with PeakRSS(worker_pids) as rss:
        timings = asyncio.run(many_turns(port, texts, at_once))
    wall = time.perf_counter() - started
    cpu = cpu_seconds(pids) - before - idle_rate * wall
    worker_cpu = cpu_seconds(worker_pids) - before_worker - idle_worker_rate * wall
    return Load(timings, wall, cpu, worker_cpu, max(0, rss.peak - idle_rss))


def child_env(redis_url: str, broker_url: str, **extra: str) -> dict[str, str]:
    """The environment of the web and worker processes a run starts."""
    return {
        **dict(__import__("os").environ),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "PYTHONPATH": str(ROOT),
        **extra,
    }


@contextlib.contextmanager
def stack(
    config: Config, redis_url: str, logdir: Path, concurrency: int
) -> Iterator[tuple[int, list[int], list[int]]]:
    """(web port, worker pids, every measured pid) of a running stack."""
    with database(config.db, logdir) as db_url, broker(config.broker, redis_url) as broker_url:
        env = child_env(redis_url, broker_url, DATABASE_URL=db_url, RELAYLINE_AGENT=AGENT)
        with (
            workers(env, config.workers, concurrency, logdir) as started,
            gunicorn(env, logdir, workers=config.webs) as web,
        ):
            yield web.port, started.pids, [*started.pids, *web.workers]


def run_config(config: Config, redis_url: str, logdir: Path) -> Result:
    per_worker = -(-config.turns // config.workers)  # ceil: every turn gets a slot
    concurrency = max(DEFAULT_CONCURRENCY, per_worker)
    word = "three" if config.seconds == 3 else "five"
    with stack(config, redis_url, logdir, concurrency) as (port, worker_pids, pids):
        load = measure(port, worker_pids, pids, [word] * config.turns, config.turns)
    ok = [t for t in load.timings if t.ok]
    firsts = sorted(t.first for t in ok) or [float("nan")]
    lasts = sorted(t.last for t in ok) or [float("nan")]
    in_flight = min(config.turns, config.workers * concurrency)
    return Result(
        config=config,
        concurrency=concurrency,
        ok=len(ok),
        failed=len(load.timings) - len(ok),
        wall=load.wall,
        turns_per_second=len(ok) / load.wall,
        first_p50=percentile(firsts, 0.5),  # type: ignore[arg-type]
        first_p99=percentile(firsts, 0.99),  # type: ignore[arg-type]
        last_p99=percentile(lasts, 0.99),  # type: ignore[arg-type]
        cpu_per_turn_ms=load.cpu / config.turns * 1000,
        worker_cpu_per_turn_ms=load.worker_cpu / config.turns * 1000,
        memory_per_turn_kb=load.memory_kb / in_flight,
    )


@dataclasses.dataclass(frozen=True)
class Floor:
    """The same burst against bench/scale_floor.py: Flask, Celery and Redis alone."""

    turns: int
    failed: int
    first_p50: float
    first_p99: float
    wall: float
    #: CPU of the web and worker processes per turn (nan in runs recorded before it)
    cpu_per_turn_ms: float = float("nan")


def floor(redis_url: str, logdir: Path, turns: int) -> Floor:
    """``turns`` posted at once to the floor app (bench/scale_floor.py) on the same web
    command and worker command, pool and concurrency as relayline's run: the first-byte
    latency this machine leaves before any of relayline's own work."""
    env = child_env(redis_url, redis_url)
    concurrency = max(DEFAULT_CONCURRENCY, turns)
    with (
        workers(env, 1, concurrency, logdir, app=f"{FLOOR}:celery") as started,
        gunicorn(env, logdir, app=f"{FLOOR}:app") as web,
    ):
        # Measured as relayline's runs are: after the same rest, idle CPU subtracted.
        pids = [*started.pids, *web.workers]
        load = measure(web.port, started.pids, pids, ["floor"] * turns, turns)
    firsts = sorted(t.first for t in load.timings if t.ok) or [float("nan")]
    return Floor(
        turns=turns,
        failed=sum(not t.ok for t in load.timings),
        first_p50=percentile(firsts, 0.5),  # type: ignore[arg-type]
        first_p99=percentile(firsts, 0.99),  # type: ignore[arg-type]
        wall=load.wall,
        cpu_per_turn_ms=load.cpu / turns * 1000,
    )


def fixed_cost(redis_url: str, logdir: Path) -> tuple[float, float, int]:
    """CPU ms per quiet turn across web and worker (and of the worker alone), one
    worker and one web process."""
    config = Config(1, 1, "sqlite", "redis", QUIET_TURNS, 3)
    with stack(config, redis_url, logdir, DEFAULT_CONCURRENCY) as (port, worker_pids, pids):
        # Warm up: imports, first connections, the agent spec.
        asyncio.run(many_turns(port, ["quiet"] * QUIET_AT_ONCE, QUIET_AT_ONCE))
        load = measure(port, worker_pids, pids, ["quiet"] * QUIET_TURNS, QUIET_AT_ONCE)
    failed = sum(not t.ok for t in load.timings)
    return load.cpu / QUIET_TURNS * 1000, load.worker_cpu / QUIET_TURNS * 1000, failed


# output ----------------------------------------------------------------------------


def rows_of(results: Sequence[Result]) -> list[Row]:
    rows = []
    for r in results:
        c = r.config
        label = (
            f"{c.turns} x {c.seconds:g}s turns, {c.workers} worker(s) x {r.concurrency} {POOL[0]}, "
            f"{c.webs} web, {c.db}, {c.broker}"
        )
        rows.append(
            Row(
                "scale",
                label,
                f"{r.turns_per_second:.1f} turns/s, {r.failed} failed",
                f"first p50 {r.first_p50:.2f} s p99 {r.first_p99:.2f} s",
                f"last p99 {r.last_p99:.2f} s, wall {r.wall:.1f} s",
                f"cpu {r.cpu_per_turn_ms:.0f} ms/turn ({r.worker_cpu_per_turn_ms:.0f} worker)",
                f"mem {r.memory_per_turn_kb:.0f} kB/turn",
            )
        )
    return rows


def done_when_rows(
    results: Sequence[Result], fixed_ms: float | None, base: Floor | None = None
) -> list[Row]:
    rows: list[Row] = []
    for r in results:
        c = r.config
        if (c.workers, c.webs, c.db, c.broker) != (1, 1, "sqlite", "redis"):
            continue
        if c.turns == 500 and c.seconds == 3:
            rows.append(
                Row(
                    "done",
                    "500 x 3 s turns, 1 worker: first-byte p99, errors",
                    f"{r.first_p99:.2f} s, {r.failed} failed",
                    "-" if base is None else f"floor {base.first_p99:.2f} s",
                    "-" if base is None else f"{r.first_p99 / base.first_p99:.1f}x the floor",
                    "<= 1 s, 0 failed",
                    verdict(r.first_p99 <= FIRST_BYTE_P99_TARGET and r.failed == 0),
                )
            )
            rows.append(
                Row(
                    "done",
                    "memory per in-flight turn (500 x 3 s, 1 worker)",
                    f"{r.memory_per_turn_kb:.0f} kB",
                    "-",
                    "-",
                    "<= 1024 kB",
                    verdict(r.memory_per_turn_kb <= MEMORY_TARGET_KB),
                )
            )
        if c.turns == 40 and c.seconds == 5:
            rows.append(
                Row(
                    "done",
                    "40 x 5 s turns, 1 worker: all done",
                    f"{r.wall:.1f} s, {r.failed} failed",
                    "-",
                    "-",
                    "<= 12 s",
                    verdict(r.wall <= FIVE_SECOND_WALL_TARGET and r.failed == 0),
                )
            )
    if base is not None:
        rows.append(
            Row(
                "done",
                f"the floor: {base.turns} turns at once through Flask, Celery and Redis alone",
                f"first byte p50 {base.first_p50:.2f} s, p99 {base.first_p99:.2f} s",
                "-",
                f"{base.failed} failed, wall {base.wall:.1f} s, "
                f"cpu {base.cpu_per_turn_ms:.1f} ms/turn (web + worker)",
                "-",
                "info",
            )
        )
    if fixed_ms is not None:
        rows.append(
            Row(
                "done",
                "fixed CPU per quiet turn, web + worker",
                f"{fixed_ms:.1f} ms",
                "-",
                "-",
                "<= 10 ms",
                verdict(fixed_ms <= FIXED_CPU_TARGET_MS),
            )
        )
    return rows


def plot(results: Sequence[Result], path: Path, base: Floor | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    series: dict[tuple[object, ...], list[Result]] = {}
    for r in results:
        c = r.config
        series.setdefault((c.turns, c.seconds, c.webs, c.db, c.broker), []).append(r)
    for (turns, seconds, webs, db, brk), found in sorted(series.items(), key=str):
        found.sort(key=lambda r: r.config.workers)
        if len({r.config.workers for r in found}) > 1:
            left.plot(
                [r.config.workers for r in found],
                [r.turns_per_second for r in found],
                marker="o",
                label=f"{turns} x {seconds:g}s, {webs} web, {db}, {brk}",
            )
    left.set(xlabel="worker processes", ylabel="turns/s", title="Throughput against workers")
    left.set_ylim(bottom=0)
    by_workers: dict[tuple[object, ...], list[Result]] = {}
    for r in results:
        c = r.config
        if c.seconds == 3:
            by_workers.setdefault((c.workers, c.webs, c.db, c.broker), []).append(r)
    for (workers_n, webs, db, brk), found in sorted(by_workers.items(), key=str):
        found.sort(key=lambda r: r.config.turns)
        label = f"{workers_n} worker(s), {webs} web, {db}, {brk}"
        turns = [r.config.turns for r in found]
        if len(found) == 1:  # one step along another axis: a point, not a curve
            right.plot(turns, [found[0].first_p99], marker="s", linestyle="", label=f"p99, {label}")
            continue
        right.plot(turns, [r.first_p99 for r in found], marker="o", label=f"p99, {label}")
        right.plot(
            turns,
            [r.first_p50 for r in found],
            marker=".",
            linestyle="--",
            label=f"p50, {label}",
        )
    if base is not None:
        right.plot(
            [base.turns],
            [base.first_p99],
            marker="x",
            linestyle="",
            color="black",
            label="p99, floor: Flask, Celery and Redis alone",
        )
    right.axhline(FIRST_BYTE_P99_TARGET, color="grey", linewidth=0.8, linestyle=":")
    right.set(
        xlabel="concurrent 3 s turns",
        ylabel="first byte (s)",
        title="First-byte latency against concurrent turns",
        xscale="log",
    )
    for axis in (left, right):
        axis.grid(alpha=0.3)
        if axis.lines:
            axis.legend(fontsize=7)
    fig.suptitle(f"relayline bench/scale.py (2-core machine, {POOL[0]} pool)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _result(saved: dict[str, object]) -> Result:
    fields = dict(saved)
    fields["config"] = Config(**saved["config"])  # type: ignore[arg-type]
    fields.setdefault("worker_cpu_per_turn_ms", float("nan"))
    return Result(**fields)  # type: ignore[arg-type]


def parse_list(text: str, kind: type) -> list:  # type: ignore[type-arg]
    return [kind(part) for part in text.split(",") if part]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--done-when", action="store_true", help="the issue's done-when parts")
    parser.add_argument("--matrix", action="store_true", help="the whole matrix (slow)")
    parser.add_argument("--turns", default="", help="concurrent turns, e.g. 1,10,100,500")
    parser.add_argument("--workers", default="1", help="worker processes, e.g. 1,2,4")
    parser.add_argument("--webs", default="1", help="web processes, e.g. 1,2")
    parser.add_argument("--db", default="sqlite", help="sqlite,postgres")
    parser.add_argument("--broker", default="redis", help="redis,rabbitmq")
    parser.add_argument("--seconds", type=float, default=3.0, help="answer pace: 3 or 5")
    parser.add_argument("--fixed", action="store_true", help="measure the fixed cost")
    parser.add_argument(
        "--floor", action="store_true", help="500 turns through Flask, Celery and Redis alone"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write docs/")
    parser.add_argument(
        "--pool",
        choices=("gevent", "threads"),
        default=Settings.worker_pool,
        help="the workers' pool; another than relayline's default is a comparison "
        "(nothing written to docs/)",
    )
    parser.add_argument("--plot-only", action="store_true", help="redraw from docs/scale.json")
    args = parser.parse_args(argv)
    if args.plot_only:
        saved = json.loads((DOCS / "scale.json").read_text())
        saved_floor = saved.get("floor")
        base = None if saved_floor is None else Floor(**saved_floor)
        plot([_result(r) for r in saved["results"]], DOCS / "scale.png", base)
        return 0
    configs: list[Config] = []
    if args.matrix:
        configs += [
            Config(w, web, db, brk, n, 3)
            for w in (1, 2, 4)
            for web in (1, 2)
            for db in ("sqlite", "postgres")
            for brk in ("redis", "rabbitmq")
            for n in (1, 10, 100, 500)
        ]
    if args.done_when:
        configs += [Config(1, 1, "sqlite", "redis", n, 3) for n in (1, 10, 100, 500)]
        configs += [Config(w, 1, "sqlite", "redis", 100, 3) for w in (2, 4)]
        configs.append(Config(1, 1, "sqlite", "redis", 40, 5))
        # One step along each other axis of the matrix, at 100 turns.
        configs += [
            Config(1, 2, "sqlite", "redis", 100, 3),
            Config(1, 1, "postgres", "redis", 100, 3),
            Config(1, 1, "sqlite", "rabbitmq", 100, 3),
        ]
    if args.turns:
        configs += [
            Config(w, web, db, brk, n, args.seconds)
            for w in parse_list(args.workers, int)
            for web in parse_list(args.webs, int)
            for db in parse_list(args.db, str)
            for brk in parse_list(args.broker, str)
            for n in parse_list(args.turns, int)
        ]
    configs = list(dict.fromkeys(configs))
    POOL[0] = args.pool
    if args.pool != Settings.worker_pool:
        args.no_write = True  # an experiment, never the figures of record
        print(f"EXPERIMENT: workers on the {args.pool} pool", flush=True)
    sys.path.insert(0, str(ROOT))  # tests.support is not an installed package
    results: list[Result] = []
    fixed_ms: float | None = None
    base: Floor | None = None
    busy0, total0 = machine_cpu()
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp, redis_database() as url:
        logdir = Path(tmp)
        if args.fixed or args.done_when:
            fixed_ms, worker_ms, failed = fixed_cost(url, logdir)
            print(
                f"fixed CPU per quiet turn: {fixed_ms:.1f} ms, of which the worker "
                f"{worker_ms:.1f} ms ({failed} failed)",
                flush=True,
            )
        if args.floor or args.done_when:
            base = floor(url, logdir, FLOOR_TURNS)
            print(
                f"floor: {base.turns} turns, first byte p50 {base.first_p50:.2f} s "
                f"p99 {base.first_p99:.2f} s, cpu {base.cpu_per_turn_ms:.1f} ms/turn "
                f"({base.failed} failed)",
                flush=True,
            )
        for config in configs:
            started = time.monotonic()
            try:
                result = run_config(config, url, logdir)
            except Exception as exc:
                print(f"{config}: crashed: {exc!r}", flush=True)
                continue
            results.append(result)
            print_table(rows_of([result]), f"{config} ({time.monotonic() - started:.0f} s)")
    busy1, total1 = machine_cpu()
    print_table(rows_of(results), "all configurations")
    done = done_when_rows(results, fixed_ms, base)
    if done:
        print_table(done, "done when")
    print(f"machine busy {100 * (busy1 - busy0) / (total1 - total0):.0f}% over the run")
    if not args.no_write and results:
        DOCS.mkdir(exist_ok=True)
        record = {
            "fixed_cpu_ms": fixed_ms,
            "floor": None if base is None else dataclasses.asdict(base),
            "results": [dataclasses.asdict(r) for r in results],
        }
        (DOCS / "scale.json").write_text(json.dumps(record, indent=1) + "\n")
        plot(results, DOCS / "scale.png", base)
        print(f"wrote {DOCS / 'scale.json'} and {DOCS / 'scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
