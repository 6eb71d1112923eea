"""The agent loop through a database outage (``RunLoop.write`` over
``persistence.outage.through_outage``), on a SQLite file whose store fails the way a
lost PostgreSQL connection does: before a write commits, and after it committed (the
client never hears the commit). Either way the turn completes, the tool runs once and
its result is the one the model reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from relayline.shared.agent import Agent
from relayline.shared.agent.loop import INTERRUPTED_ERROR
from relayline.shared.persistence import Store
from relayline.shared.persistence.store import RunRecord
from tests.support.agents import build_spec, count


class FlakyStore(Store):
    """Fails the first ``write_run`` that records a tool's result, once ``before`` or
    once after its commit, as a connection cut by a restarting server would."""

    def __init__(self, url: str, *, after_commit: bool) -> None:
        super().__init__(url)
        self.after_commit = after_commit
        self.failed = 0

    def write_run(self, record: RunRecord, **fields: Any) -> RunRecord:
        accepted = fields.get("accepted")
        results = accepted.get("results") if isinstance(accepted, dict) else None
        if results and not self.failed:
            self.failed += 1
            if self.after_commit:
                super().write_run(record, **fields)
            raise sa.exc.OperationalError("UPDATE runs", {}, Exception("server closed"))
        return super().write_run(record, **fields)


@pytest.mark.parametrize("after_commit", [False, True], ids=["before-commit", "after-commit"])
def test_a_tool_result_outlives_a_lost_connection(tmp_path: Path, after_commit: bool) -> None:
    store = FlakyStore(f"sqlite:///{tmp_path / 'db.sqlite'}", after_commit=after_commit)
    try:
        state = Agent("t-out", build_spec(tmp_path), store).run("weather?")
        assert store.failed == 1  # the outage happened
        assert state.status == "completed"
        assert count(tmp_path, "tool.weather") == 1
        history = store.messages("t-out")
        assert history[-1].text.startswith("Weather: ")
        assert INTERRUPTED_ERROR not in str([m.content_json() for m in history])
    finally:
        store.dispose()
