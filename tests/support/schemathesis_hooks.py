"""Loaded by ``st run`` (``SCHEMATHESIS_HOOKS``) in tests/integration/
test_openapi_schemathesis.py: the check that a refused request changes no state.

Before every call the stored state is read (every row of every table of the stack's
SQLite database, after the worker has settled what earlier requests started); after a
4xx it is read again and must be the same."""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

import schemathesis
from schemathesis import Case, HookContext, Response

#: the stack's SQLite file (set by the test)
DATABASE = os.environ["RELAYLINE_TEST_SCHEMATHESIS_DB"]
#: run statuses the worker still moves on its own
MOVING = ("running",)
SETTLE_SECONDS = 30.0

_before: dict[str, list[tuple[Any, ...]]] = {}


def _state() -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(DATABASE) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"'), key=repr) for t in tables}


def _settled() -> None:
    """Wait (bounded) until no run is still moving: a turn an earlier request started
    writes its last rows a moment after its stream ends."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        with sqlite3.connect(DATABASE) as conn:
            marks = ",".join("?" * len(MOVING))
            moving = conn.execute(f"SELECT count(*) FROM runs WHERE status IN ({marks})", MOVING)
            if moving.fetchone()[0] == 0:
                return
        time.sleep(0.05)  # polling the database for a condition, bounded by the deadline


@schemathesis.hook
def before_call(context: HookContext, case: Case[Any], kwargs: dict[str, Any]) -> None:
    _settled()
    _before.clear()
    _before.update(_state())


@schemathesis.check
def refused_changes_nothing(ctx: Any, response: Response, case: Case[Any]) -> bool | None:
    if not 400 <= response.status_code < 500:
        return None
    after = _state()
    changed = sorted(t for t in after if after[t] != _before.get(t))
    assert not changed, f"a refused request ({response.status_code}) changed {changed}"
    return None
