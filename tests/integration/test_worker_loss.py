"""A whole worker lost mid-run (SIGKILL of its main process and its pool child: an OOM
kill, a lost node) on the Redis broker, whose unacknowledged task would come back only
after the visibility timeout (an hour): another worker's sweeper sees the heartbeat
lapse and recovers the run from its last checkpoint, with the default heartbeat
settings (15 s, renewed every 5 s), within 30 s and without running a completed
backend tool again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests

from shared.persistence import Store
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, frames, text_of
from tests.support.stack import fresh_env, running_stack

pytestmark = pytest.mark.integration

RECOVERY_TARGET = 30.0


def test_a_lost_worker_is_recovered_by_another_within_30_seconds(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        redis_databases.database(f"worker loss {tmp_path.name}") as redis_url,
        # The second model call kills the worker that runs it, whole, once; the weather
        # tool ran and was checkpointed just before.
        running_stack(
            fresh_env(tmp_path, redis_url, RELAYLINE_TEST_KILL_WORKER_ON_CALL="2"), workers=2
        ) as (web, workers),
    ):
        started = time.monotonic()
        with requests.post(
            f"{web.url}/api/threads/lost-1/messages",
            json={"content": "Weather please"},
            stream=True,
            timeout=60,
        ) as response:
            assert response.status_code == 200
            events = [frame.event for frame in frames(response)]
        # The relay heard the lost segment stop and another begin: an error, not a hang.
        assert events[-1]["type"] == "error"
        assert events[-1]["code"] == "RUN_CONTINUES_ELSEWHERE"  # never "The run failed."
        # nor "done": the run goes on, which the missing done tells the client
        assert all(e["type"] != "done" for e in events)
        assert count(tmp_path, "killed") == 1
        assert sum(w.process.poll() is not None for w in workers) == 1  # one worker is gone

        store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
        try:
            deadline = started + RECOVERY_TARGET
            record = store.current_run("lost-1")
            while record is not None and record.status != "completed":
                assert time.monotonic() < deadline, f"not recovered in {RECOVERY_TARGET} s"
                time.sleep(0.1)  # polling the stored run, bounded by the target
                record = store.current_run("lost-1")
            recovered_in = time.monotonic() - started
            assert record is not None and record.attempt == 2
            assert store.messages("lost-1")[-1].text == "Weather: sunny in Oslo"
            print(f"recovered in {recovered_in:.1f} s")  # shown with -s; the figure for ops
        finally:
            store.dispose()
        assert count(tmp_path, "tool.weather") == 1  # checkpointed, never run again
        assert count(tmp_path, "model") == 2

        # The thread is not locked: the next turn runs at once on the surviving worker.
        after = requests.post(
            f"{web.url}/api/threads/lost-1/messages", json={"content": "hello"}, timeout=60
        )
        assert after.status_code == 200
        assert text_of(events_of(after.text)) == "Hello! hello"
