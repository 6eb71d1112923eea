"""Test helpers shipped for applications' own tests (like httpx ``MockTransport``).

``FakeChannel`` stands in for any channel: it records what the agent pushes, with no
envelope, sequencing or transport, and offers assertion helpers::

    fake = FakeChannel()
    agent.set_channel(lambda: fake)
    agent.run("Hello")
    fake.assert_sent("text")
    fake.assert_completed("thread-1")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from channels.base import SegmentState
from shared.events import ProtocolEvent


@dataclasses.dataclass(frozen=True)
class Completion:
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
        self.interruptions: list[SegmentState] = []
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

    def interrupted(self, state: SegmentState) -> None:
        self.interruptions.append(state)
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

    def assert_interrupted(self, workflow_id: str | None = None) -> SegmentState:
        """Assert the last terminal was an interruption (of ``workflow_id`` when given)."""
        self._assert_last("interrupted")
        state = self.interruptions[-1]
        if workflow_id is not None and state.thread_id != workflow_id:
            raise AssertionError(f"Interrupted {state.thread_id!r}, expected {workflow_id!r}.")
        return state

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
