"""A backend tool interrupted by the loss of its process (os._exit inside the tool, a
real process, a real store) is never silently run again: on recovery the call is re-run
only when its tool is declared idempotent, else settled with the interrupted error the
model sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from relayline.shared.agent import Agent
from relayline.shared.agent.loop import INTERRUPTED_ERROR
from relayline.shared.persistence import Store
from tests.support.agents import build_spec, count
from tests.support.chaos import report
from tests.support.stack import ROOT

CRASHING_RUN = """
import sys
from pathlib import Path
from relayline.shared.agent import Agent
from relayline.shared.persistence import Store
from tests.support.agents import build_spec
store = Store(sys.argv[1])
Agent(sys.argv[2], build_spec(Path(sys.argv[3]), crash_in_tool=True), store).run(sys.argv[4])
"""


def _lose_worker_in_tool(tmp_path: Path, database_url: str, thread: str, text: str) -> None:
    died = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, database_url, thread, str(tmp_path), text],
        cwd=ROOT,
        timeout=60,
    )
    assert died.returncode == 17  # lost inside the tool


def _recover(tmp_path: Path, store: Store, thread: str) -> str:
    record = store.current_run(thread)
    assert record is not None and record.status == "running"
    assert record.checkpoint.get("toolStarted") is not None
    state = Agent(thread, build_spec(tmp_path), store).recover(attempt=record.attempt).run()
    assert state.status == "completed"
    return store.messages(thread)[-1].text


def test_an_interrupted_tool_is_settled_not_run_again(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = Store(database_url)
    try:
        _lose_worker_in_tool(tmp_path, database_url, "int-1", "Weather please")
        assert _recover(tmp_path, store, "int-1") == f"Weather: {INTERRUPTED_ERROR}"
        results = [m for m in store.messages("int-1") if m.role == "tool"]
        assert INTERRUPTED_ERROR in str(results[-1])
    finally:
        store.dispose()
    report(f"process lost inside a tool: executions/tool={count(tmp_path, 'tool.weather')}")
    assert count(tmp_path, "tool.weather") == 1  # never run a second time


def test_an_interrupted_idempotent_tool_is_run_again(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = Store(database_url)
    try:
        _lose_worker_in_tool(tmp_path, database_url, "int-2", "lookup please")
        assert _recover(tmp_path, store, "int-2") == "Found: value of k"
    finally:
        store.dispose()
    assert count(tmp_path, "tool.lookup") == 2  # declared safe to run again
