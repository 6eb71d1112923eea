"""FakeChannel, the test double applications use in their own tests."""

from __future__ import annotations

import pytest

from channels import FakeChannel
from shared.delivery import Channel
from shared.events import ProtocolEvent
from tests.unit.channels.support import State


def test_records_sends_and_lifecycle_in_order() -> None:
    fake = FakeChannel()
    assert isinstance(fake, Channel)
    fake.send(ProtocolEvent("text", {"content": "a"}))
    fake.interrupted(State("t1"))
    fake.send(ProtocolEvent("text", {"content": "b"}))
    error = RuntimeError("boom")
    fake.failed(error, "t1")
    fake.completed(State("t1"), "t1")
    assert fake.types == ["text", "text"]
    assert fake.lifecycle == ["interrupted", "failed", "completed"]
    assert fake.interruptions == [State("t1")]
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
    fake.interrupted(State("t1"))
    assert fake.assert_interrupted("t1") == State("t1")
    with pytest.raises(AssertionError, match="Interrupted 't1', expected 't2'"):
        fake.assert_interrupted("t2")
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
