"""Test helpers shipped for applications' own tests (like httpx ``MockTransport``).

``MemoryChannel`` is a real channel that publishes into memory: events are enveloped,
sequenced, fragmented and batched exactly as by a transport, and a test reads what it
would have published, in order, terminal included::

    memory = MemoryChannel()
    agent.set_channel(lambda: memory)
    agent.run("Hello")
    assert memory.terminal is not None and memory.terminal.type == "stream.completed"
    [event.type for event in memory.events()]  # logical events, fragments reassembled

``FakeChannel`` stands in for any channel one level up: it records the calls the agent
makes (``ProtocolEvent``s and terminals, no envelope or sequence) and offers assertion
helpers::

    fake = FakeChannel()
    agent.set_channel(lambda: fake)
    agent.run("Hello")
    fake.assert_sent("text")
    fake.assert_completed("thread-1")
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

from relayline.channels.base import AbstractChannel, SegmentState
from relayline.channels.consumer import Consumer
from relayline.channels.envelope import Envelope, is_terminal, utf8_len
from relayline.channels.errors import PublishError
from relayline.channels.fragments import Fragment, join_parts
from relayline.shared.events import ProtocolEvent


@dataclasses.dataclass(frozen=True)
class Completion:
    state: SegmentState
    workflow_id: str


@dataclasses.dataclass(frozen=True)
class Interruption:
    state: SegmentState
    workflow_id: str


@dataclasses.dataclass(frozen=True)
class Failure:
    error: BaseException
    workflow_id: str


class FakeChannel:
    """Records sends and lifecycle calls. One instance may serve several segments:
    records accumulate, and ``lifecycle`` lists the terminals in call order."""

    def __init__(self) -> None:
        self.sent: list[ProtocolEvent] = []
        self.interruptions: list[Interruption] = []
        self.completions: list[Completion] = []
        self.failures: list[Failure] = []
        #: "completed", "interrupted" or "failed" per terminal call, in order
        self.lifecycle: list[str] = []
        self._send_error: Exception | None = None

    def throw_on_send(self, error: Exception | None) -> FakeChannel:
        """Make every later ``send`` raise ``error`` (None: stop raising)."""
        self._send_error = error
        return self

    # the Channel protocol ----------------------------------------------------------

    def send(self, event: ProtocolEvent) -> None:
        if self._send_error is not None:
            raise self._send_error
        self.sent.append(event)

    def completed(self, state: SegmentState, workflow_id: str) -> None:
        self.completions.append(Completion(state, workflow_id))
        self.lifecycle.append("completed")

    def interrupted(self, state: SegmentState, workflow_id: str) -> None:
        self.interruptions.append(Interruption(state, workflow_id))
        self.lifecycle.append("interrupted")

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self.failures.append(Failure(error, workflow_id))
        self.lifecycle.append("failed")

    # assertions --------------------------------------------------------------------

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.sent]

    def assert_sent(
        self, match: str | Callable[[ProtocolEvent], bool], count: int | None = None
    ) -> list[ProtocolEvent]:
        """Assert events of that type (or passing the predicate) were sent, ``count``
        times when given; return them."""
        if isinstance(match, str):
            found = [event for event in self.sent if event.type == match]
            what = f"events of type {match!r}"
        else:
            found = [event for event in self.sent if match(event)]
            what = "events matching the predicate"
        if count is None and not found:
            raise AssertionError(f"No {what} were sent; sent types: {self.types}.")
        if count is not None and len(found) != count:
            raise AssertionError(f"Expected {count} {what}, found {len(found)}: {self.types}.")
        return found

    def assert_nothing_sent(self) -> None:
        if self.sent:
            raise AssertionError(f"Expected no events, sent types: {self.types}.")

    def assert_completed(self, workflow_id: str | None = None) -> Completion:
        """Assert the last terminal was a completion (of ``workflow_id`` when given)."""
        self._assert_last("completed")
        done = self.completions[-1]
        if workflow_id is not None and done.workflow_id != workflow_id:
            raise AssertionError(f"Completed {done.workflow_id!r}, expected {workflow_id!r}.")
        return done

    def assert_interrupted(self, workflow_id: str | None = None) -> Interruption:
        """Assert the last terminal was an interruption (of ``workflow_id`` when given)."""
        self._assert_last("interrupted")
        pause = self.interruptions[-1]
        if workflow_id is not None and pause.workflow_id != workflow_id:
            raise AssertionError(f"Interrupted {pause.workflow_id!r}, expected {workflow_id!r}.")
        return pause

    def assert_failed(
        self, error_type: type[BaseException] | None = None, workflow_id: str | None = None
    ) -> Failure:
        """Assert the last terminal was a failure, with that error type and workflow."""
        self._assert_last("failed")
        failure = self.failures[-1]
        if error_type is not None and not isinstance(failure.error, error_type):
            raise AssertionError(
                f"Failed with {type(failure.error).__name__}, expected {error_type.__name__}."
            )
        if workflow_id is not None and failure.workflow_id != workflow_id:
            raise AssertionError(f"Failed {failure.workflow_id!r}, expected {workflow_id!r}.")
        return failure

    def _assert_last(self, kind: str) -> None:
        if not self.lifecycle or self.lifecycle[-1] != kind:
            last = self.lifecycle[-1] if self.lifecycle else "none"
            raise AssertionError(f"Expected the last terminal to be {kind!r}, got {last!r}.")


class MemoryChannel(AbstractChannel):
    """An ``AbstractChannel`` whose transport is a list: each delivery is kept as the
    text it would publish, a JSON array of envelopes (as ``CallbackChannel`` hands on).

    Limits work as on any transport (``budget`` fragments big events, ``batch_size``
    groups them). ``fail_on`` lists 1-based delivery attempts that raise PublishError,
    to test how an application lives with a transport failure; the channel's own
    failure policy then applies (data stops, the terminal is still attempted). One
    instance serves one segment, like every channel.
    """

    def __init__(
        self,
        *,
        budget: int | None = None,
        event_budget: int | None = None,
        batch_size: int = 1,
        fail_on: Collection[int] = (),
    ) -> None:
        super().__init__(budget=budget, event_budget=event_budget, batch_size=batch_size)
        self.fail_on = frozenset(fail_on)
        #: delivery attempts so far, the failed ones included
        self.attempts = 0
        #: every successful delivery, in order, as published
        self.deliveries: list[str] = []

    def deliver(self, batch: str) -> None:
        self.attempts += 1
        if self.attempts in self.fail_on:
            raise PublishError(f"MemoryChannel delivery {self.attempts} failed (fail_on).")
        self.deliveries.append(batch)

    def batch(self, items: Sequence[str]) -> str:
        return "[" + ",".join(items) + "]"

    def batch_bytes(self, items: Sequence[str]) -> int:
        return utf8_len(",".join(items)) + 2

    # reading -----------------------------------------------------------------------

    def frames(self) -> list[dict[str, Any]]:
        """Every envelope published, decoded, in publish order (fragments included):
        what a subscriber of a real transport receives."""
        return [frame for delivery in self.deliveries for frame in json.loads(delivery)]

    def events(self) -> list[Envelope]:
        """The logical events, fragments reassembled, terminal last once sent.
        Raises GapError when one went missing (a failed delivery)."""
        delivered: list[Envelope] = []
        now = 0.0
        consumer = Consumer(delivered.append, segment_id=self.segment_id, clock=lambda: now)
        for frame in self.frames():
            consumer.feed(frame)
        now += consumer.gap_timeout  # whatever is still missing will never come
        consumer.poll()
        return delivered

    @property
    def terminal(self) -> Envelope | None:
        """The published terminal (reassembled if fragmented), or None: not sent yet, or
        its delivery failed. Readable even after a gap, unlike ``events()``."""
        envelopes = [Envelope.parse(frame) for frame in self.frames()]
        if not envelopes:
            return None
        last = envelopes[-1]  # a segment's terminal is its last event
        if last.is_terminal:
            return last
        if not last.is_fragment:
            return None
        fragment = Fragment.parse(last.data)
        if not is_terminal(fragment.event):
            return None
        parts = {
            part.index: part.part
            for part in (Fragment.parse(e.data) for e in envelopes if e.sequence == last.sequence)
        }
        if len(parts) != fragment.total:
            return None
        data = join_parts([parts[index] for index in range(fragment.total)])
        return Envelope(last.segment_id, last.sequence, fragment.event, data)
