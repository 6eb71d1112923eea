"""A backlog of relayed turns whose clients are already gone drains at the workers' pace:
no task waits for a listener (a relay target writes only the segment's log, which the
web reads whenever it comes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from celery import Celery

from relayline.shared.jobs import RUN_TURN, Target, TurnJob, UserTurn
from relayline.shared.persistence import Store
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env

pytestmark = pytest.mark.integration

#: turns in the backlog; each used to wait 5 s for its absent listener
BACKLOG = 6


def test_turns_whose_relay_reader_is_gone_do_not_wait_for_it(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"relay backlog {tmp_path.name}") as redis_url:
        env = fresh_env(tmp_path, redis_url)
        sender = Celery("backlog", broker=redis_url)
        threads = [f"gone-{index}" for index in range(BACKLOG)]
        try:
            for thread in threads:
                job = TurnJob(
                    thread_id=thread,
                    run_id=f"run-{thread}",
                    protocol="native",
                    message=UserTurn(f"u-{thread}", "hello"),
                    # a relay nobody listens to: its client left before the task ran
                    target=Target("relay", f"relayline:relay:{thread}"),
                )
                sender.send_task(RUN_TURN, kwargs={"job": job.to_json()})
        finally:
            sender.close()
        store = Store(env["DATABASE_URL"])
        # One slot, so the backlog drains one task at a time (as waits would add up).
        worker = Worker(env, "backlog", concurrency=1)
        try:
            started = time.monotonic()
            # Waiting 5 s per task, six tasks took at least 30 s; without the wait they
            # take well under a second each. The bound is half the old floor.
            deadline = started + BACKLOG * 5.0 / 2
            while True:
                done = [store.run(t, f"run-{t}") for t in threads]
                if all(r is not None and r.status == "completed" for r in done):
                    break
                assert time.monotonic() < deadline, (
                    f"{sum(1 for r in done if r is not None and r.status == 'completed')} "
                    f"of {BACKLOG} turns done after {deadline - started:.0f} s"
                )
                time.sleep(0.05)  # polling the store, bounded by the deadline
        finally:
            worker.stop()
            store.dispose()
