"""One behaviour suite for channel transports (kombu ``t/integration/common.py`` style).

A transport's test class inherits ``ChannelBehaviour`` and implements two hooks:

- ``make_channel(name, fragmenting=..., fail_delivery=...)``: a channel publishing on
  ``name``; ``fragmenting`` sets limits small enough to fragment a few-kB event;
  ``fail_delivery=n`` makes the n-th delivery fail in the transport's own way.
- ``subscribe(name)``: a live subscription (``Subscription``), set up before any publish.

Each test subscribes, runs a real agent segment (native adapter, SQLite store) through
the channel, and asserts what the subscriber received, fed through the Python consumer.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Protocol

import pytest

from relayline.channels import AbstractChannel, Consumer, Envelope
from relayline.channels.envelope import FRAGMENT, TERMINALS
from relayline.shared.agent import Agent, AgentSpec, FrontendTool, tool
from relayline.shared.errors import RunFailedError
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.providers import ScriptedProvider

#: a tool result of about 12 kB, mixing 2-, 3- and 4-byte UTF-8 characters
LONG_RESULT = "Perugia è bella / 😀 日本語 " * 400

SCRIPT: dict[str, Any] = {
    "chunk_size": 6,
    "rules": [
        {"match": "(?i)fail", "steps": [{"text": "Partial answer", "error": "model exploded"}]},
        {
            "match": "(?i)long",
            "steps": [
                {"tool_calls": [{"id": "call_l", "name": "long_text", "arguments": {}}]},
                {"text": "Read it."},
            ],
        },
        {
            "match": "(?i)title",
            "steps": [{"tool_calls": [{"id": "call_t", "name": "read_title", "arguments": {}}]}],
        },
        {
            "match": "",
            "steps": [{"reasoning": "Greeting.", "text": "Hello, {{last_user_message}}"}],
        },
    ],
}


def suite_spec() -> AgentSpec:
    @tool
    def long_text() -> str:
        """Return a long multibyte text."""
        return LONG_RESULT

    return AgentSpec(
        provider=ScriptedProvider(SCRIPT),
        tools=[long_text],
        frontend_tools=[FrontendTool("read_title", "Read the page title")],
    )


class Subscription(Protocol):
    def receive(self, timeout: float) -> list[dict[str, Any]]:
        """Frames (decoded envelopes) in arrival order, once the segment's terminal has
        fully arrived; raise AssertionError if it does not within ``timeout`` seconds."""
        ...

    def close(self) -> None: ...


def terminal_arrived(frames: list[dict[str, Any]]) -> bool:
    """True once a terminal, or every fragment of one, is among ``frames``."""
    parts: dict[tuple[str, int], set[int]] = {}
    for frame in frames:
        if frame["type"] in TERMINALS:
            return True
        data = frame["data"]
        if frame["type"] == FRAGMENT and data["event"] in TERMINALS:
            key = (frame["streamId"], frame["sequence"])
            parts.setdefault(key, set()).add(data["index"])
            if len(parts[key]) == data["total"]:
                return True
    return False


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def consume(frames: list[Any], clock: Clock | None = None) -> tuple[list[Envelope], list[str]]:
    """Feed frames to a fresh consumer; return what it delivered and any gaps."""
    delivered: list[Envelope] = []
    gaps: list[str] = []
    consumer = Consumer(delivered.append, gaps.append, clock=clock or Clock())
    for frame in frames:
        consumer.feed(frame)
    if clock is not None:
        clock.now += consumer.gap_timeout
        consumer.poll()
    return delivered, gaps


def logical(events: list[ProtocolEvent], terminal: str, thread: str) -> list[tuple[str, Any]]:
    return [(e.type, e.data) for e in events] + [(terminal, {"workflowId": thread})]


class ChannelBehaviour:
    """The behaviour every transport shares. Subclasses implement the two hooks."""

    def make_channel(
        self, name: str, *, fragmenting: bool = False, fail_delivery: int | None = None
    ) -> AbstractChannel:
        raise NotImplementedError

    def subscribe(self, name: str) -> Subscription:
        raise NotImplementedError

    receive_timeout = 10.0

    def run_segment(
        self, store: Store, message: str, **options: Any
    ) -> tuple[list[ProtocolEvent], list[dict[str, Any]], list[AbstractChannel]]:
        """Subscribe, run one segment through a fresh channel, return pulled events,
        received frames and the channel(s) built."""
        name = f"relayline:test:{uuid.uuid4().hex}"
        agent = Agent(f"thread-{uuid.uuid4().hex[:8]}", suite_spec(), store)
        agent.set_stream_adapter(NativeAdapter)
        built: list[AbstractChannel] = []

        def fresh() -> AbstractChannel:
            built.append(self.make_channel(name, **options))
            return built[-1]

        agent.set_channel(fresh)
        subscription = self.subscribe(name)
        pulled: list[ProtocolEvent] = []
        try:
            try:
                for event in agent.stream(message):
                    pulled.append(event)
            except RunFailedError:
                pass
            frames = subscription.receive(self.receive_timeout)
        finally:
            subscription.close()
        self.thread = agent.thread_id
        return pulled, frames, built

    # the suite ---------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("message", "terminal"),
        [
            ("hello", "stream.completed"),
            ("What is the title?", "stream.interrupted"),
            ("please fail", "stream.failed"),
        ],
    )
    def test_a_segment_arrives_whole_in_order_with_its_terminal(
        self, sqlite_store: Store, message: str, terminal: str
    ) -> None:
        pulled, frames, _ = self.run_segment(sqlite_store, message)
        delivered, gaps = consume(frames)
        assert not gaps
        assert [(e.type, e.data) for e in delivered] == logical(pulled, terminal, self.thread)
        assert [e.sequence for e in delivered] == list(range(len(pulled) + 1))
        assert len({e.segment_id for e in delivered}) == 1
        # the protocol's own end comes last, before the channel terminal
        status = {"stream.completed": "completed", "stream.interrupted": "interrupted"}
        assert pulled[-1].type == "done"
        assert pulled[-1].data["status"] == status.get(terminal, "failed")
        if terminal == "stream.failed":
            assert pulled[-2].type == "error"

    def test_long_multibyte_payloads_are_fragmented_and_reassembled_intact(
        self, sqlite_store: Store
    ) -> None:
        pulled, frames, _ = self.run_segment(sqlite_store, "long read", fragmenting=True)
        assert sum(1 for f in frames if f["type"] == FRAGMENT) > 3
        delivered, gaps = consume(frames)
        assert not gaps
        expected = logical(pulled, "stream.completed", self.thread)
        assert [(e.type, e.data) for e in delivered] == expected
        results = [e.data for e in delivered if e.type == "tool-result"]
        assert results[0]["tool"]["result"] == LONG_RESULT

    def test_reordered_and_duplicated_frames_are_delivered_once_in_order(
        self, sqlite_store: Store
    ) -> None:
        pulled, frames, _ = self.run_segment(sqlite_store, "long read", fragmenting=True)
        shuffled = frames + frames[::3]
        random.Random(7).shuffle(shuffled)
        assert shuffled != frames
        delivered, gaps = consume(shuffled)
        assert not gaps
        assert [(e.type, e.data) for e in delivered] == logical(
            pulled, "stream.completed", self.thread
        )

    def test_a_missing_fragment_is_reported_as_a_gap(self, sqlite_store: Store) -> None:
        _, frames, _ = self.run_segment(sqlite_store, "long read", fragmenting=True)
        first = next(i for i, f in enumerate(frames) if f["type"] == FRAGMENT)
        sequence = frames[first]["sequence"]
        delivered, gaps = consume(frames[: first + 1] + frames[first + 2 :], Clock())
        assert gaps == ["Missing channel events"]
        assert [e.sequence for e in delivered] == list(range(sequence))

    def test_a_transport_failure_is_followed_by_the_terminal(self, sqlite_store: Store) -> None:
        pulled, frames, built = self.run_segment(sqlite_store, "hello", fail_delivery=2)
        [channel] = built
        assert channel.stopped and len(channel.errors) == 1
        # The lost event keeps its sequence; later data is dropped without taking any.
        assert len(pulled) > 2
        assert [f["sequence"] for f in frames] == [0, 2]
        assert frames[-1]["type"] == "stream.completed"
        delivered, gaps = consume(frames, Clock())
        assert [e.sequence for e in delivered] == [0]
        assert gaps == ["Missing channel events"]
