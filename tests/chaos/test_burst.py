"""A burst of 200 turns at one real worker (concurrency 2) behind admission control
(RELAYLINE_MAX_QUEUED_TURNS=8): each turn completes or is refused with 429 before
anything is stored, and none is lost: the database holds exactly one completed run,
and nothing else, per accepted turn."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
import sqlalchemy as sa

from relayline.shared.persistence import Store
from relayline.shared.persistence.schema import runs
from tests.support.chaos import report
from tests.support.http_app import assert_queue_full, thread_count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env

BURST = 200


def _runs_by_status(store: Store) -> dict[str, int]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            sa.select(runs.c.status, sa.func.count()).group_by(runs.c.status)
        ).all()
    return {str(status): int(number) for status, number in rows}


def test_a_burst_of_200_turns_on_one_worker_completes_or_is_refused(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"burst {tmp_path.name}") as redis_url:
        env = fresh_env(
            tmp_path,
            redis_url,
            RELAYLINE_MAX_QUEUED_TURNS="8",
            RELAYLINE_WORKER_CONCURRENCY="2",
        )
        worker = Worker(env, "w0")
        web = WebServer(env)
        store = Store(env["DATABASE_URL"])
        try:

            def turn(index: int) -> tuple[int, int, Any, str]:
                response = requests.post(
                    f"{web.url}/api/threads/burst-{index}/messages",
                    json={"content": f"turn {index}"},
                    timeout=120,
                )
                return index, response.status_code, response.headers, response.text

            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=32) as pool:
                answers = list(pool.map(turn, range(BURST)))
            took = time.monotonic() - started
            done = [a for a in answers if a[1] == 200]
            refused = [a for a in answers if a[1] != 200]
            assert done and refused  # the limit bit, and the worker kept serving
            for index, status, headers, text in refused:
                assert_queue_full(status, headers, json.loads(text))
                assert store.thread(f"burst-{index}") is None  # no thread, run or message
                assert store.messages(f"burst-{index}") == []
            for index, _, _, text in done:
                assert text_of(events_of(text)) == f"Hello! turn {index}"
                assert store.messages(f"burst-{index}")[-1].text == f"Hello! turn {index}"
            # Counted in the database: one completed run per accepted turn, nothing else.
            by_status = _runs_by_status(store)
            lost = len(done) - by_status.get("completed", 0)
            report(
                f"burst on one worker: n={BURST} in {took:.1f}s completed={len(done)} "
                f"refused429={len(refused)} lost={lost} runs={by_status}"
            )
            assert by_status == {"completed": len(done)}
            assert thread_count(store) == len(done)
            # Every started turn was uncounted: nothing waits any more.
            queue = requests.get(f"{web.url}/readyz", timeout=10).json()["queue"]
            assert queue == {"depth": 0, "limit": 8, "perOwnerLimit": 0}
        finally:
            store.dispose()
            web.stop()
            worker.stop()
