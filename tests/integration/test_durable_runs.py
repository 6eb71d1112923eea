"""Durable runs on SQLite and a real PostgreSQL, continued across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from relayline.shared.agent import Agent
from relayline.shared.errors import (
    InputTranslationError,
    RunNotWaitingError,
    StaleRunError,
    WorkflowError,
)
from relayline.shared.interrupts import ApprovalRequest, ToolResultsRequest
from relayline.shared.persistence import Store
from tests.support.agents import build_spec, count

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def step(
    database_url: str,
    thread: str,
    counts: Path,
    op: str,
    payload: Any = None,
    crash: int | None = None,
) -> dict[str, Any]:
    """Run one operation in a fresh Python process, as another worker would."""
    command = [
        sys.executable,
        "-m",
        "tests.support.step",
        database_url,
        thread,
        str(counts),
        op,
        json.dumps(payload),
    ]
    if crash is not None:
        command += ["--crash-on-call", str(crash)]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if crash is not None:
        assert done.returncode == 17, done.stderr
        return {}
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    with store.engine.connect() as conn:
        return {
            table: [
                tuple(row) for row in conn.execute(sa.text(f"SELECT * FROM {table} ORDER BY 1"))
            ]
            for table in ("threads", "messages", "runs")
        }


def test_approval_then_frontend_round_trip(store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    state = Agent("t-1", spec, store).run("Delete the report")
    assert state.status == "suspended"
    assert state.interrupt is not None and state.interrupt.kind == "approval"
    assert isinstance(state.interrupt, ApprovalRequest)
    assert [a.id for a in state.interrupt.actions] == ["call_d"]
    assert count(tmp_path, "tool.delete_file") == 0  # nothing executes before approval

    state = Agent("t-1", spec, store).submit_approval_decisions({"call_d": "approve"}).run()
    assert state.status == "suspended"
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"
    assert isinstance(state.interrupt, ToolResultsRequest)
    assert [c.id for c in state.interrupt.tool_calls] == ["call_t"]
    assert count(tmp_path, "tool.delete_file") == 1

    state = Agent("t-1", spec, store).submit_tool_results({"call_t": {"result": "Report"}}).run()
    assert state.status == "completed"
    assert state.message == 'Finished: {"call_d":"r.pdf deleted","call_t":"Report"}'
    assert count(tmp_path, "model") == 2
    assert count(tmp_path, "tool.delete_file") == 1
    roles = [m.role for m in store.messages("t-1")]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_partial_approvals_and_results_across_processes(database_url: str, tmp_path: Path) -> None:
    """Approve a, approve b, reject c; then a's result; then a and b: model called twice."""
    first = step(database_url, "t-2", tmp_path, "turn", "Run the batch")
    assert first["status"] == "suspended"
    assert [a["id"] for a in first["interrupt"]["actions"]] == ["call_a", "call_b", "call_c"]

    second = step(database_url, "t-2", tmp_path, "approve", {"call_a": "approve"})
    assert second["status"] == "suspended"
    assert second["interrupt"]["eventName"] == "approval"
    assert [a["id"] for a in second["interrupt"]["actions"]] == ["call_b", "call_c"]
    assert second["interrupt"]["interruptId"] > first["interrupt"]["interruptId"]

    third = step(
        database_url,
        "t-2",
        tmp_path,
        "approve",
        {"call_b": "approve", "call_c": ["reject", "not that page"]},
    )
    assert third["interrupt"]["eventName"] == "tool_results"
    assert [c["callId"] for c in third["interrupt"]["toolCalls"]] == ["call_a", "call_b"]

    fourth = step(database_url, "t-2", tmp_path, "results", {"call_a": {"result": "Page A"}})
    assert fourth["status"] == "suspended"
    assert [c["callId"] for c in fourth["interrupt"]["toolCalls"]] == ["call_b"]
    assert count(tmp_path, "model") == 1  # a partial batch re-suspends without inference

    last = step(
        database_url,
        "t-2",
        tmp_path,
        "results",
        {"call_a": {"result": "Page A"}, "call_b": {"result": {"title": "B"}}},
    )
    assert last["status"] == "completed"
    assert count(tmp_path, "model") == 2

    store = Store(database_url)
    try:
        tool_message = [m for m in store.messages("t-2") if m.role == "tool"][-1]
        outcomes = {r.call_id: r.content for r in tool_message.tool_results}
        assert [r.call_id for r in tool_message.tool_results] == ["call_a", "call_b", "call_c"]
        assert outcomes["call_a"] == "Page A"
        assert outcomes["call_b"] == '{"title":"B"}'
        assert "TOOL NOT EXECUTED" in outcomes["call_c"]
        assert "not that page" in outcomes["call_c"]
    finally:
        store.dispose()


def test_identical_repeat_is_accepted_without_work(store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    Agent("t-3", spec, store).run("Run the batch")
    Agent("t-3", spec, store).submit_approval_decisions(
        {"call_a": "approve", "call_b": "approve", "call_c": "approve"}
    ).run()
    first = Agent("t-3", spec, store).submit_tool_results({"call_a": {"result": "A"}})
    assert first.adds_answers  # the web claims the interruption for this one
    first.run()
    before = snapshot(store)
    repeat = Agent("t-3", spec, store).submit_tool_results({"call_a": {"result": "A"}})
    assert not repeat.adds_answers  # nothing new: it claims nothing, competes with no one
    state = repeat.run()
    assert state.status == "suspended"
    assert state.interrupt is not None and state.interrupt.pending_ids == ["call_b", "call_c"]
    assert snapshot(store) == before
    assert count(tmp_path, "model") == 1


def test_conflicting_repeat_and_forged_ids_change_nothing(store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    Agent("t-4", spec, store).run("Run the batch")
    agent = Agent("t-4", spec, store)
    agent.submit_approval_decisions(
        {"call_a": "approve", "call_b": "approve", "call_c": "approve"}
    ).run()
    agent.submit_tool_results({"call_a": {"result": "A"}}).run()
    before = snapshot(store)
    with pytest.raises(WorkflowError, match="'call_a' has already been settled with a different"):
        agent.submit_tool_results({"call_a": {"result": "other"}})
    with pytest.raises(WorkflowError, match="'call_zz' does not belong to this deferred batch"):
        agent.submit_tool_results({"call_b": {"result": "B"}, "call_zz": {"result": "x"}})
    with pytest.raises(InputTranslationError, match="must contain either 'result' or a string"):
        agent.submit_tool_results({"call_b": {"result": 1, "error": "x"}})
    assert snapshot(store) == before


def test_stale_submission_is_refused_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    Agent("t-5", spec, store).run("What is the title?")
    first = Agent("t-5", spec, store).submit_tool_results({"call_t": {"result": "One"}})
    second = Agent("t-5", spec, store).submit_tool_results({"call_t": {"result": "Two"}})
    assert first.run().status == "completed"
    before = snapshot(store)
    with pytest.raises(StaleRunError, match="expected execution attempt 1, current attempt is 2"):
        second.run()
    assert snapshot(store) == before
    with pytest.raises(RunNotWaitingError, match="is completed: there is no current"):
        Agent("t-5", spec, store).submit_tool_results({"call_t": {"result": "Two"}})
    assert count(tmp_path, "model") == 2


def test_crash_after_backend_tool_is_retried_without_running_it_again(
    database_url: str, tmp_path: Path
) -> None:
    # The second model call kills the process: the weather tool already ran and was checkpointed.
    step(database_url, "t-6", tmp_path, "turn", "Weather please", crash=2)
    assert count(tmp_path, "tool.weather") == 1
    store = Store(database_url)
    try:
        record = store.current_run("t-6")
        assert record is not None and record.status == "running" and record.attempt == 1
    finally:
        store.dispose()
    done = step(database_url, "t-6", tmp_path, "recover", 1)
    assert done["status"] == "completed"
    assert done["message"] == "Weather: sunny in Oslo"
    assert done["attempt"] == 2
    assert count(tmp_path, "tool.weather") == 1
    # A second redelivery with the old attempt is fenced out.
    store = Store(database_url)
    try:
        with pytest.raises(WorkflowError):
            Agent("t-6", build_spec(tmp_path), store).recover(attempt=1)
    finally:
        store.dispose()


def test_concurrent_continuations_one_wins_and_the_tool_runs_once(
    store: Store, tmp_path: Path
) -> None:
    import threading

    spec = build_spec(tmp_path)
    Agent("t-7", spec, store).run("Delete the report")
    staged = [
        Agent("t-7", spec, Store(store.url, migrate=False)).submit_approval_decisions(
            {"call_d": "approve"}
        )
        for _ in range(2)
    ]
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def attempt(index: int) -> None:
        barrier.wait()
        try:
            outcomes.append(staged[index].run().status)
        except WorkflowError as exc:
            outcomes.append(type(exc).__name__)

    workers = [threading.Thread(target=attempt, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(map(str, outcomes))[1] == "suspended"
    assert sorted(map(str, outcomes))[0] in ("ConflictError", "StaleRunError")
    assert count(tmp_path, "tool.delete_file") == 1
    for item in staged:
        item.agent.store.dispose()
