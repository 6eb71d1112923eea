"""Stop latency, measured on the real stack (one Celery worker process, ``relayline web``'s
gunicorn server, Redis, SQLite):

    .venv/bin/python bench/stop.py            # 100 stops
    .venv/bin/python bench/stop.py --stops 20

Each round posts a turn whose scripted model streams a long answer (one delta every
50 ms), reads it until its third text frame, then POSTs ``/api/threads/<id>/cancel``
and times from sending the stop to the ``cancelled`` frame at the streaming client.
Target (issue 11): p99 at most 250 ms. The baseline, measured in the same streams, is
the gap between two text frames before the stop: the model's own pace, which bounds how
soon a stop noticed "at the next delta" can land when the model is not blocked. Also
printed: how long the stop request itself took, and whether every model stream was
closed (the scripted provider's log). Exits 0 whatever it measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from relay import (
    ROOT,
    Row,
    gunicorn,
    ms,
    percentile,
    print_table,
    quantile_rows,
    redis_database,
    verdict,
)

TARGET_P99_NS = 250e6
WARMUP = 3


def frames(response: http.client.HTTPResponse) -> Iterator[dict[str, object]]:
    """The SSE ``data:`` frames of a streaming response as they arrive."""
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])


def one_stop(port: int, thread: str) -> tuple[int, int, int]:
    """(stop request sent -> cancelled frame, the stop request's own time, the gap
    between two text frames before it), in nanoseconds."""
    stream = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    stream.request(
        "POST",
        f"/api/threads/{thread}/messages",
        body=json.dumps({"content": "tell me a story"}),
        headers={"Content-Type": "application/json"},
    )
    response = stream.getresponse()
    incoming = frames(response)
    seen: list[int] = []
    for frame in incoming:
        if frame["type"] == "text":
            seen.append(time.perf_counter_ns())
            if len(seen) == 3:
                break
    control = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = time.perf_counter_ns()
    control.request("POST", f"/api/threads/{thread}/cancel")
    answer = json.loads(control.getresponse().read())
    answered = time.perf_counter_ns()
    control.close()
    if answer.get("stopped") is not True:
        raise RuntimeError(f"the stop was not taken: {answer}")
    for frame in incoming:
        if frame["type"] == "cancelled":
            ended = time.perf_counter_ns()
            break
    else:
        raise RuntimeError("the stream ended without its cancelled frame")
    stream.close()
    return ended - sent, answered - sent, seen[2] - seen[1]


def count(counts: Path, name: str) -> int:
    path = counts / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def run(stops: int) -> list[Row]:
    from relayline.shared.persistence import Store
    from tests.support.stack import Worker, stack_env

    with tempfile.TemporaryDirectory(prefix="stop-bench-") as tmp, redis_database() as url:
        logdir = Path(tmp)
        database_url = f"sqlite:///{logdir / 'stack.db'}"
        Store(database_url).dispose()  # migrated before the worker touches it
        env = stack_env(url, database_url, logdir)
        latency: list[int] = []
        request: list[int] = []
        pace: list[int] = []
        worker = Worker(env, "bench")
        try:
            with gunicorn(env, logdir) as server:
                for index in range(WARMUP + stops):
                    found = one_stop(server.port, f"stop-{index}-{uuid.uuid4().hex[:8]}")
                    if index >= WARMUP:
                        latency.append(found[0])
                        request.append(found[1])
                        pace.append(found[2])
        finally:
            worker.stop()
        closed = count(logdir, "model.closed")
    for values in (latency, request, pace):
        values.sort()
    p99 = percentile(latency, 0.99)
    label = f"stop -> cancelled frame ({stops} stops)"
    return [
        Row(
            "1",
            f"{label} p99",
            ms(p99),
            ms(percentile(pace, 0.99)),
            f"{p99 / max(1, percentile(pace, 0.99)):.2f}x the model's pace",
            "<= 250 ms",
            verdict(p99 <= TARGET_P99_NS),
        ),
        *quantile_rows("1", label, latency, pace, [("p50", 0.5), ("max", 1.0)]),
        Row("1", "stop request answered p50", ms(percentile(request, 0.5)), "-", "-", "-", "info"),
        Row(
            "1",
            "model streams closed by the stop",
            f"{closed} of {WARMUP + stops}",
            "-",
            "-",
            "all",
            verdict(closed == WARMUP + stops),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stops", type=int, default=100, help="stops to time (default 100)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # tests.support is not an installed package
    started = time.monotonic()
    rows = run(args.stops)
    print_table(rows, f"stop latency ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
