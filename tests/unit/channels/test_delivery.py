"""What a real agent segment delivers to channels (catalogue F 58-67), on a SQLite file.

Unit-level on purpose: the agent, native adapter and channels run in-process with no
transport, so each lifecycle rule is checked without a service."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from relayline.channels import CallbackChannel, Consumer, Envelope, FakeChannel
from relayline.channels.base import SegmentState
from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.chunks import InterruptEvent
from relayline.shared.delivery import Channel
from relayline.shared.errors import RunFailedError
from relayline.shared.interrupts import ApprovalRequest, ToolResultsRequest
from relayline.shared.persistence import Store
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.providers import ScriptedProvider
from tests.support.agents import build_spec
from tests.support.channel_support import Memory


class Segments:
    """A channel factory: one CallbackChannel per segment, each read by its own consumer."""

    def __init__(self, **limits: int) -> None:
        self.limits = limits
        self.received: list[list[Envelope]] = []

    def __call__(self) -> CallbackChannel:
        delivered: list[Envelope] = []
        self.received.append(delivered)
        consumer = Consumer(delivered.append)
        return CallbackChannel(consumer.feed_batch, **self.limits)


def agent_for(store: Store, tmp_path: Path, thread: str = "t1") -> Agent:
    agent = Agent(thread, build_spec(tmp_path), store)
    agent.set_stream_adapter(NativeAdapter)
    return agent


def test_channel_gets_every_adapted_event_then_completion(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F58
    agent = agent_for(sqlite_store, tmp_path)
    segments = Segments(budget=400, batch_size=4)
    agent.set_channel(segments)
    state = agent.run("hello")
    assert state.status == "completed"
    [received] = segments.received
    assert [e.sequence for e in received] == list(range(len(received)))
    kinds = [e.type for e in received]
    assert kinds[0] == "step-started"
    assert kinds[-3:] == ["step-finished", "done", "stream.completed"]
    text = "".join(e.data["content"] for e in received if e.type == "text")
    assert text == state.message == "Hello! hello"
    assert received[-1].data == {"workflowId": "t1"}


def test_pull_and_channel_see_the_same_instances_in_order(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F59
    agent = agent_for(sqlite_store, tmp_path)
    fake = FakeChannel()
    agent.set_channel(lambda: fake)
    pulled = list(agent.stream("batch please"))
    assert len(pulled) == len(fake.sent) > 5
    assert all(a is b for a, b in zip(pulled, fake.sent, strict=True))
    fake.assert_interrupted("t1")


def test_send_failures_never_fail_the_run(sqlite_store: Store, tmp_path: Path) -> None:  # F60
    agent = agent_for(sqlite_store, tmp_path)
    fake = FakeChannel().throw_on_send(ConnectionError("down"))
    errors: list[BaseException] = []
    agent.on_channel_error = errors.append
    agent.set_channel(lambda: fake)
    pulled = list(agent.stream("hello"))
    assert len(errors) == len(pulled) and all(isinstance(e, ConnectionError) for e in errors)
    fake.assert_completed("t1")

    broken = Memory(fail_on=(2,))
    agent.set_channel(lambda: broken)
    errors.clear()
    assert agent.run("hello again").status == "completed"
    assert [type(e) for e in errors] == [ConnectionError]  # delivery stopped after one
    frames = broken.envelopes()
    assert frames[-1].type == "stream.completed" and frames[-1].sequence > 1
    assert [f.sequence for f in frames[:-1]] == [0]


def test_without_adapter_the_channel_gets_only_the_lifecycle(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F61, F62
    agent = Agent("t1", build_spec(tmp_path), sqlite_store)
    fake, memory = FakeChannel(), Memory()
    channels: Iterator[Channel] = iter([fake, memory])
    agent.set_channel(lambda: next(channels))
    pulled = list(agent.stream("What is the title?"))
    assert isinstance(pulled[-1], InterruptEvent)
    fake.assert_nothing_sent()
    state = fake.assert_interrupted("t1").state
    assert isinstance(state.interrupt, ToolResultsRequest)  # type: ignore[attr-defined]
    assert [c.id for c in state.interrupt.tool_calls] == ["call_t"]  # type: ignore[attr-defined]
    assert len(fake.interruptions) == 1

    agent.submit_tool_results({"call_t": {"result": "Title"}}).run()
    assert [(e.sequence, e.type) for e in memory.envelopes()] == [(0, "stream.completed")]


def test_each_interruption_delivers_its_own_state(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F63, F65
    agent = agent_for(sqlite_store, tmp_path)
    fakes: list[FakeChannel] = []

    def fresh() -> FakeChannel:
        fakes.append(FakeChannel())
        return fakes[-1]

    agent.set_channel(fresh)
    agent.run("delete the report")
    agent.submit_approval_decisions({"call_d": "approve"}).run()
    agent.submit_tool_results({"call_t": {"result": "Title"}}).run()
    assert [f.lifecycle for f in fakes] == [["interrupted"], ["interrupted"], ["completed"]]
    first: SegmentState = fakes[0].interruptions[0].state
    second: SegmentState = fakes[1].interruptions[0].state
    assert isinstance(first.interrupt, ApprovalRequest)  # type: ignore[attr-defined]
    assert isinstance(second.interrupt, ToolResultsRequest)  # type: ignore[attr-defined]
    # Resumed segments carry only post-resume output: no call is announced again.
    assert "tool-call" in fakes[0].types
    assert "tool-call" not in fakes[1].types + fakes[2].types
    assert fakes[2].types[0] == "tool-result"


def test_resumed_segment_gets_a_fresh_stream_from_sequence_zero(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F65
    agent = agent_for(sqlite_store, tmp_path)
    segments = Segments()
    agent.set_channel(segments)
    agent.run("What is the title?")
    agent.submit_tool_results({"call_t": {"result": "Title"}}).run()
    first, second = segments.received
    assert first[-1].type == "stream.interrupted" and second[-1].type == "stream.completed"
    assert first[0].segment_id != second[0].segment_id
    assert second[0].sequence == 0 and second[0].type == "tool-result"
    assert not any(e.type == "tool-call" for e in second)


def test_a_failure_calls_failed_and_still_propagates(sqlite_store: Store) -> None:  # F64
    provider = ScriptedProvider({"rules": [{"match": "", "steps": [{"text": "so", "error": "x"}]}]})
    agent = Agent("t1", AgentSpec(provider=provider), sqlite_store)
    agent.set_stream_adapter(NativeAdapter)
    segments, fake = Segments(), FakeChannel()
    channels: Iterator[Channel] = iter([segments(), fake])
    agent.set_channel(lambda: next(channels))
    with pytest.raises(RunFailedError):
        list(agent.stream("hello"))
    assert [e.type for e in segments.received[0]][-3:] == ["error", "done", "stream.failed"]
    with pytest.raises(RunFailedError):
        list(agent.stream("hello"))
    failure = fake.assert_failed(workflow_id="t1")
    assert not isinstance(failure.error, RunFailedError)  # the original error


class FailingTerminal(FakeChannel):
    def completed(self, state: SegmentState, workflow_id: str) -> None:
        raise ConnectionError("terminal lost")


def test_a_failing_terminal_is_reported_never_raised(
    sqlite_store: Store, tmp_path: Path
) -> None:  # F66
    agent = agent_for(sqlite_store, tmp_path)
    errors: list[BaseException] = []
    agent.on_channel_error = errors.append
    channels: Iterator[Channel] = iter([FailingTerminal(), Memory(fail_always=True)])
    agent.set_channel(lambda: next(channels))
    assert agent.run("hello").status == "completed"
    assert [str(e) for e in errors] == ["terminal lost"]
    errors.clear()
    assert agent.run("hello again").status == "completed"
    assert errors and all(isinstance(e, ConnectionError) for e in errors)


def test_a_failing_error_listener_is_logged_and_the_run_completes(
    sqlite_store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:  # F67
    agent = agent_for(sqlite_store, tmp_path)
    agent.set_channel(lambda: FakeChannel().throw_on_send(ConnectionError("down")))

    def listener(error: BaseException) -> None:
        raise RuntimeError("listener broke")

    agent.on_channel_error = listener
    with caplog.at_level(logging.ERROR, logger="relayline.agent"):
        assert agent.run("hello").status == "completed"
    assert any("listener failed" in r.getMessage() for r in caplog.records)
