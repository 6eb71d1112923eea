"""The cost of metrics and traces, measured on the real stack (one Celery worker, the
production web server, Redis, SQLite) with both off and both on, alternated in rounds:

    .venv/bin/python bench/observability.py            # 3 rounds of 30 turns and 3 floods
    .venv/bin/python bench/observability.py --rounds 1

"On" is ``RELAYLINE_METRICS=1`` on the web and a worker metrics port, plus tracing
exported over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT``) to a receiver on 127.0.0.1
that decodes every span, with the SDK's batch processor. Printed: POST to first SSE
byte p50 (a turn that answers "Hello!"), and events per second of one answer streaming
3,000 deltas with no pause, each against the same with everything off in the same run.
Target (issue 14): at most 5% worse on each. Exits 0 whatever it measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from relay import (
    ROOT,
    Row,
    gunicorn,
    ms,
    post_turn,
    print_table,
    redis_database,
    verdict,
)
from stop import frames

TURNS = 30
FLOODS = 3
TARGET = 1.05


@contextmanager
def stack(url: str, logdir: Path, observed: bool, receiver_url: str) -> Iterator[int]:
    from relayline.shared.persistence import Store
    from tests.support.soketi import free_port
    from tests.support.stack import Worker, stack_env

    database_url = f"sqlite:///{logdir / f'{uuid.uuid4().hex}.db'}"
    Store(database_url).dispose()
    env = stack_env(url, database_url, logdir)
    if observed:
        env |= {
            "RELAYLINE_METRICS": "1",
            "RELAYLINE_METRICS_PORT": str(free_port()),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
        }
    worker = Worker(env, f"bench-{'on' if observed else 'off'}")
    try:
        with gunicorn(env, logdir) as server:
            yield server.port
    finally:
        worker.stop()


def flood(port: int, thread: str) -> float:
    """Events per second of one long answer, from its first frame to its last."""
    import http.client
    import json

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request(
        "POST",
        f"/api/threads/{thread}/messages",
        body=json.dumps({"content": "flood me"}),
        headers={"Content-Type": "application/json"},
    )
    first = last = 0.0
    count = 0
    for frame in frames(connection.getresponse()):
        if frame["type"] == "text":
            last = time.perf_counter()
            first = first or last
            count += 1
    connection.close()
    return count / (last - first)


def measure(port: int, label: str) -> tuple[list[int], list[float]]:
    for index in range(3):  # warm up both processes and their pools
        post_turn(port, f"warm-{label}-{index}-{uuid.uuid4().hex[:6]}")
    firsts = []
    for index in range(TURNS):
        elapsed, text = post_turn(port, f"turn-{label}-{index}-{uuid.uuid4().hex[:6]}")
        if not text.startswith("Hello!"):
            raise RuntimeError(f"unexpected reply {text!r}")
        firsts.append(elapsed)
    rates = [flood(port, f"flood-{label}-{i}-{uuid.uuid4().hex[:6]}") for i in range(FLOODS)]
    return firsts, rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.otlp import otlp_receiver

    results: dict[bool, tuple[list[int], list[float]]] = {False: ([], []), True: ([], [])}
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="obs-bench-") as tmp,
        redis_database() as url,
        otlp_receiver() as receiver,
    ):
        for round_number in range(args.rounds):
            for observed in (False, True):
                with stack(url, Path(tmp), observed, receiver.url) as port:
                    firsts, rates = measure(port, f"{round_number}{int(observed)}")
                results[observed][0].extend(firsts)
                results[observed][1].extend(rates)
        spans = len(receiver.spans)
    off_first = statistics.median(results[False][0])
    on_first = statistics.median(results[True][0])
    off_rate = statistics.median(results[False][1])
    on_rate = statistics.median(results[True][1])
    rows = [
        Row(
            "1",
            f"POST -> first byte p50 ({len(results[True][0])} turns)",
            ms(on_first),
            ms(off_first),
            f"{on_first / off_first:.3f}x",
            "<= 1.05x",
            verdict(on_first <= off_first * TARGET),
        ),
        Row(
            "2",
            f"events/s of one 3,000-delta answer ({len(results[True][1])} answers)",
            f"{on_rate:,.0f}",
            f"{off_rate:,.0f}",
            f"{off_rate / on_rate:.3f}x slower",
            "<= 1.05x",
            verdict(off_rate <= on_rate * TARGET),
        ),
        Row("-", "spans the receiver decoded", str(spans), "-", "-", "-", "info"),
    ]
    print_table(rows, f"metrics and traces on vs off ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
