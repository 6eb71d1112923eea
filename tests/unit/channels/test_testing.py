"""The channels applications use in their own tests (FakeChannel, MemoryChannel), and
NullChannel."""

from __future__ import annotations

import json

import pytest

from relayline.channels import (
    Envelope,
    FakeChannel,
    GapError,
    MemoryChannel,
    NullChannel,
    PublishError,
)
from relayline.channels.testing import Interruption
from relayline.shared.delivery import Channel
from relayline.shared.events import ProtocolEvent
from tests.support.channel_support import State


def test_records_sends_and_lifecycle_in_order() -> None:
    fake = FakeChannel()
    assert isinstance(fake, Channel)
    fake.send(ProtocolEvent("text", {"content": "a"}))
    fake.interrupted(State("t1"), "w1")
    fake.send(ProtocolEvent("text", {"content": "b"}))
    error = RuntimeError("boom")
    fake.failed(error, "t1")
    fake.completed(State("t1"), "t1")
    assert fake.types == ["text", "text"]
    assert fake.lifecycle == ["interrupted", "failed", "completed"]
    assert fake.interruptions == [Interruption(State("t1"), "w1")]
    assert fake.failures[0].error is error and fake.failures[0].workflow_id == "t1"
    assert fake.completions[0].workflow_id == "t1"


def test_assert_sent_by_type_predicate_and_count() -> None:
    fake = FakeChannel()
    fake.send(ProtocolEvent("text", {"content": "a"}))
    fake.send(ProtocolEvent("text", {"content": "b"}))
    assert len(fake.assert_sent("text")) == 2
    fake.assert_sent("text", count=2)
    fake.assert_sent(lambda e: e.data.get("content") == "b", count=1)
    with pytest.raises(AssertionError, match="No events of type 'error'"):
        fake.assert_sent("error")
    with pytest.raises(AssertionError, match="Expected 1 events of type 'text', found 2"):
        fake.assert_sent("text", count=1)
    with pytest.raises(AssertionError, match="Expected no events"):
        fake.assert_nothing_sent()
    FakeChannel().assert_nothing_sent()


def test_terminal_assertions_check_the_last_terminal() -> None:
    fake = FakeChannel()
    with pytest.raises(AssertionError, match="got 'none'"):
        fake.assert_completed()
    fake.interrupted(State("t1"), "w1")
    assert fake.assert_interrupted("w1") == Interruption(State("t1"), "w1")
    with pytest.raises(AssertionError, match="Interrupted 'w1', expected 't1'"):
        fake.assert_interrupted("t1")
    with pytest.raises(AssertionError, match="to be 'completed', got 'interrupted'"):
        fake.assert_completed()
    fake.failed(ValueError("x"), "t1")
    fake.assert_failed(ValueError, "t1")
    with pytest.raises(AssertionError, match="Failed with ValueError, expected KeyError"):
        fake.assert_failed(KeyError)
    with pytest.raises(AssertionError, match="expected 't9'"):
        fake.assert_failed(workflow_id="t9")
    fake.completed(State("t1"), "t1")
    assert fake.assert_completed("t1").workflow_id == "t1"
    with pytest.raises(AssertionError, match="Completed 't1', expected 'x'"):
        fake.assert_completed("x")


def test_throw_on_send() -> None:
    fake = FakeChannel().throw_on_send(ConnectionError("down"))
    with pytest.raises(ConnectionError):
        fake.send(ProtocolEvent("text"))
    fake.throw_on_send(None).send(ProtocolEvent("text"))
    assert fake.types == ["text"]


# MemoryChannel ---------------------------------------------------------------------


def text(content: str) -> ProtocolEvent:
    return ProtocolEvent("text", {"content": content})


def test_memory_keeps_what_it_would_publish_in_order_with_the_terminal() -> None:
    memory = MemoryChannel(batch_size=2)
    assert isinstance(memory, Channel)
    assert memory.terminal is None and memory.events() == []
    for content in "abc":
        memory.send(text(content))
    memory.interrupted(State("t1"), "w1")
    sid = memory.segment_id
    # Deliveries are published batches: two sends, then the pending one, then the terminal.
    assert [len(json.loads(d)) for d in memory.deliveries] == [2, 1, 1]
    assert [(f["sequence"], f["type"]) for f in memory.frames()] == [
        (0, "text"),
        (1, "text"),
        (2, "text"),
        (3, "stream.interrupted"),
    ]
    assert memory.terminal == Envelope(sid, 3, "stream.interrupted", {"workflowId": "w1"})
    assert memory.events()[-1] == memory.terminal
    assert [e.data for e in memory.events()[:-1]] == [{"content": c} for c in "abc"]


def test_memory_fragments_under_its_budget_and_reassembles_the_terminal() -> None:
    long_id = "w" * 300  # a terminal too big for the event budget
    memory = MemoryChannel(event_budget=250)
    memory.send(text("Perugia è bella 😀 " * 40))
    memory.completed(State("t1"), long_id)
    frames = memory.frames()
    assert {f["type"] for f in frames} == {"stream.fragment"}
    assert memory.terminal == Envelope(
        memory.segment_id, 1, "stream.completed", {"workflowId": long_id}
    )
    [event, terminal] = memory.events()
    assert event.data == {"content": "Perugia è bella 😀 " * 40}
    assert terminal == memory.terminal


def test_memory_fail_on_loses_that_delivery_and_events_report_the_gap() -> None:
    memory = MemoryChannel(fail_on=(2,))
    memory.send(text("a"))
    with pytest.raises(PublishError, match="delivery 2 failed"):
        memory.send(text("b"))
    memory.send(text("c"))  # dropped: delivery stopped at the first failure
    memory.completed(State("t1"), "w1")
    assert memory.stopped and memory.attempts == 3
    assert [type(e) for e in memory.errors] == [PublishError]
    assert [f["sequence"] for f in memory.frames()] == [0, 2]
    assert memory.terminal is not None and memory.terminal.sequence == 2
    with pytest.raises(GapError, match="Missing channel events"):
        memory.events()


def test_memory_terminal_is_none_when_its_delivery_failed() -> None:
    memory = MemoryChannel(fail_on=(2,))
    memory.send(text("a"))
    with pytest.raises(PublishError):
        memory.failed(RuntimeError("x"), "w1")
    assert memory.terminal is None
    assert [e.type for e in memory.events()] == ["text"]


# NullChannel -----------------------------------------------------------------------


def test_null_channel_is_a_channel_that_keeps_nothing() -> None:
    null = NullChannel()
    assert isinstance(null, Channel)
    null.send(text("a"))
    null.interrupted(State("t1"), "w1")
    null.completed(State("t1"), "w1")
    null.failed(RuntimeError("x"), "w1")
    assert vars(null) == {}
