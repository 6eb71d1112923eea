"""The store on a SQLite file: idempotent append, paging, compare-and-set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from relayline.shared.errors import ConflictError, RunInFlightError
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.persistence import Store
from relayline.shared.records import RunStart

#: what these runs began with (the store keeps it and never reads it)
START: RunStart = {"message": "u1", "frontendTools": []}


def test_append_is_idempotent_by_message_id(sqlite_store: Store) -> None:
    sqlite_store.create_thread("t", "ann")
    first = Message.user("one", id="m1")
    sqlite_store.append_messages("t", [first, Message.user("two", id="m2")])
    sqlite_store.append_messages(
        "t", [Message.user("changed", id="m1"), Message.user("3", id="m3")]
    )
    stored = sqlite_store.messages("t")
    assert [(m.id, m.text) for m in stored] == [("m1", "one"), ("m2", "two"), ("m3", "3")]


def test_messages_round_trip_every_part(sqlite_store: Store) -> None:
    sqlite_store.create_thread("t", "ann")
    assistant = Message(
        id="a1",
        role="assistant",
        text="Hi ✓",
        reasoning="hm",
        tool_calls=(ToolCallPart("c1", "f", {"x": [1, None]}),),
    )
    results = Message(id="r1", role="tool", tool_results=(ToolResultPart("c1", "f", "bad", True),))
    sqlite_store.append_messages("t", [assistant, results])
    assert sqlite_store.messages("t") == [assistant, results]


def test_paging_with_before_cursor(sqlite_store: Store) -> None:
    sqlite_store.create_thread("t", "ann")
    sqlite_store.append_messages("t", [Message.user(str(i), id=f"m{i}") for i in range(7)])
    assert [m.id for m in sqlite_store.messages("t", limit=3)] == ["m4", "m5", "m6"]
    assert [m.id for m in sqlite_store.messages("t", limit=3, before="m4")] == ["m1", "m2", "m3"]
    assert [m.id for m in sqlite_store.messages("t", limit=3, before="m1")] == ["m0"]
    assert sqlite_store.messages("t", limit=3, before="unknown") == []
    with pytest.raises(ValueError):
        sqlite_store.messages("t", limit=0)


def test_compare_and_set_refuses_a_stale_version_and_writes_nothing(sqlite_store: Store) -> None:
    lease = datetime.now(UTC)
    record = sqlite_store.begin_run(
        "t",
        "r1",
        owner="ann",
        start=START,
        first_messages=[Message.user("q", id="u1")],
        lease_expires_at=lease,
    )
    moved = sqlite_store.write_run(record, status="suspended")
    with pytest.raises(ConflictError, match="nothing was written"):
        sqlite_store.write_run(record, status="failed", append=[Message.user("x", id="u2")])
    assert sqlite_store.current_run("t") == moved
    assert [m.id for m in sqlite_store.messages("t")] == ["u1"]
    with pytest.raises(RunInFlightError, match="run 'r1' \\(attempt 1\\) is suspended"):
        sqlite_store.begin_run(
            "t", "r2", owner="ann", start=START, first_messages=[], lease_expires_at=lease
        )
    sqlite_store.write_run(moved, status="completed")
    with pytest.raises(ConflictError, match="already exists"):
        sqlite_store.begin_run(
            "t", "r1", owner="ann", start=START, first_messages=[], lease_expires_at=lease
        )
    second = sqlite_store.begin_run(
        "t", "r2", owner="ann", start=START, first_messages=[], lease_expires_at=lease
    )
    assert sqlite_store.current_run("t") == second


def test_thread_keeps_its_first_owner(sqlite_store: Store) -> None:
    assert sqlite_store.create_thread("t", "ann").owner == "ann"
    assert sqlite_store.create_thread("t", "bob").owner == "ann"
    assert sqlite_store.thread("missing") is None
