"""SIGKILL of a prefork pool child mid-run (the fault injected at the second model
call, after a backend tool was checkpointed): only the child dies, its worker's main
process redelivers the task at once (``reject_on_worker_lost``), which leaves the run to
its holder while the dead child's beat lives (a holder is its instance id: host and pid
never prove it gone), and the sweeper recovers it from the checkpoint once the beat
lapses, without running the tool again. Under the threads pool the whole
worker goes instead: test_worker_loss.py."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.chaos import report, until
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import fresh_env, running_stack


def test_a_killed_pool_child_is_redelivered_without_rerunning_its_tool(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        redis_databases.database(f"pool child {tmp_path.name}") as redis_url,
        running_stack(
            fresh_env(tmp_path, redis_url, RELAYLINE_TEST_SIGKILL_ON_CALL="2"), pool="prefork"
        ) as (web, (worker,)),
    ):
        main_pid = worker.process.pid
        started = time.monotonic()
        with requests.post(
            f"{web.url}/agui",
            json={
                "threadId": "k-1",
                "runId": "r1",
                "state": {},
                "messages": [{"id": "u-k1", "role": "user", "content": "Weather please"}],
                "tools": [],
                "context": [],
                "forwardedProps": {},
            },
            stream=True,
            timeout=60,
        ) as response:
            assert response.status_code == 200
            events = [frame.event for frame in frames(response)]
        assert count(tmp_path, "killed") == 1
        # The relay saw the lost segment end and a new one begin: an error, never a hang.
        assert events[0]["type"] == "RUN_STARTED"
        assert events[-1]["type"] == "RUN_ERROR"
        # Not "The run failed.": the run goes on in its recovery, which the code names.
        assert events[-1]["code"] == "RUN_CONTINUES_ELSEWHERE"
        store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
        try:
            until(
                lambda: (r := store.current_run("k-1")) is not None and r.status == "completed",
                "the redelivered run to complete",
                timeout=30,
            )
            took = time.monotonic() - started
            record = store.current_run("k-1")
            assert record is not None and record.attempt == 2
            assert store.messages("k-1")[-1].text == "Weather: sunny in Oslo"
        finally:
            store.dispose()
        assert worker.process.poll() is None and worker.process.pid == main_pid  # it lived
        report(
            f"pool child SIGKILLed (prefork, recovered by the sweep): n=1 completed in {took:.1f}s "
            f"executions/tool={count(tmp_path, 'tool.weather')} lost=0"
        )
        assert count(tmp_path, "tool.weather") == 1
        assert count(tmp_path, "model") == 2
