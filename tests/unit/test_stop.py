"""Stopping a run through the loop, on a SQLite file: mid-answer, before the first model
call, between tools, while blocked on the model or in a tool, and while suspended."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec, tool
from relayline.shared.agent.stop import stop_thread
from relayline.shared.chunks import TextChunk
from relayline.shared.events import ProtocolEvent
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.providers import ScriptedProvider, TextDelta
from relayline.shared.providers.base import ModelDelta, ModelRequest
from relayline.shared.stop_signal import StopSignal
from relayline.shared.texts import CALL_STOPPED
from relayline.shared.tools import current_stop_signal


def story(chunks: int = 50, **step: Any) -> ScriptedProvider:
    rule = {"match": "", "steps": [{"text": "word " * chunks, **step}]}
    return ScriptedProvider({"chunk_size": 5, "rules": [rule]})


class ClosingProvider:
    """Yields text deltas forever (bounded), recording whether the loop closed it."""

    def __init__(self) -> None:
        self.yielded = 0
        self.closed = False

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        try:
            for _ in range(10_000):
                self.yielded += 1
                yield TextDelta("tick ")
        finally:
            self.closed = True


class BlockingProvider:
    """Sends one delta, then blocks as a stalled HTTP read does, until the run's cancel
    callback releases it (a real provider closes its response there)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.first = threading.Event()

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        assert request.stop_signal is not None
        unregister = request.stop_signal.on_stop(self.released.set)
        try:
            yield TextDelta("Partial ")
            self.first.set()
            if not self.released.wait(10):
                raise AssertionError("the cancel callback never ran")
            raise ConnectionError("response closed")  # what a closed socket raises
        finally:
            unregister()


def _set_after(event: threading.Event, token: StopSignal) -> None:
    """Stop from another thread, as the worker's watcher does, once ``event`` is set."""
    if event.wait(10):
        token.set()


def test_stop_mid_answer_keeps_the_partial_answer_marked_stopped(sqlite_store: Store) -> None:
    provider = ClosingProvider()
    token = StopSignal()
    agent = Agent("stop-mid", AgentSpec(provider=provider), sqlite_store, stop_signal=token)
    texts = 0
    segment = agent.stream("go")
    for item in segment:
        if isinstance(item, TextChunk):
            texts += 1
            if texts == 3:
                token.set()
    record = agent.inspect()
    assert record is not None and record.status == "cancelled"
    assert provider.closed and provider.yielded <= 4  # closed at the next delta
    stored = agent.history()
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].text == "tick " * 3
    assert stored[1].meta.get("stopped") is True
    # The thread is free at once.
    assert Agent("stop-mid", AgentSpec(provider=story(1)), sqlite_store).run("again").status == (
        "completed"
    )


def test_a_stop_recorded_before_the_run_starts_makes_no_model_call(sqlite_store: Store) -> None:
    provider = ClosingProvider()
    agent = Agent("stop-early", AgentSpec(provider=provider), sqlite_store)
    segment = agent.stream("go")
    first = next(segment)  # admitted: the run exists now, before the first model call
    del first
    record = agent.inspect()
    assert record is not None
    assert sqlite_store.request_stop("stop-early", record.run_id) is not None
    list(segment)
    record = agent.inspect()
    assert record is not None and record.status == "cancelled"
    assert provider.yielded == 0


def test_a_provider_blocked_on_the_model_is_released_by_the_cancel_callback(
    sqlite_store: Store,
) -> None:
    provider = BlockingProvider()
    token = StopSignal()
    agent = Agent("stop-blocked", AgentSpec(provider=provider), sqlite_store, stop_signal=token)
    stopper = threading.Thread(target=_set_after, args=(provider.first, token))
    stopper.start()
    state = agent.run("go")
    stopper.join()
    assert state.status == "cancelled"  # the closed stream is a stop, not a failure
    assert state.error is None
    assert agent.history()[-1].text == "Partial "


def test_stop_between_tools_settles_the_calls_not_run(sqlite_store: Store) -> None:
    ran: list[str] = []

    @tool
    def first() -> str:
        """First."""
        ran.append("first")
        record = sqlite_store.current_run("stop-tools")
        assert record is not None
        sqlite_store.request_stop("stop-tools", record.run_id)  # recorded, no token set
        return "one"

    @tool
    def second() -> str:
        """Second."""
        ran.append("second")
        return "two"

    calls = [{"id": "c1", "name": "first"}, {"id": "c2", "name": "second"}]
    script = {"rules": [{"match": "", "steps": [{"tool_calls": calls}, {"text": "done"}]}]}
    spec = AgentSpec(provider=ScriptedProvider(script), tools=[first, second])
    state = Agent("stop-tools", spec, sqlite_store).run("go")
    assert state.status == "cancelled"
    assert ran == ["first"]
    results = {p.call_id: p for p in sqlite_store.messages("stop-tools")[-1].tool_results}
    assert results["c1"].content == "one" and not results["c1"].is_error
    assert results["c2"].content == CALL_STOPPED and results["c2"].is_error


def test_a_tool_that_watches_current_cancel_ends_with_the_stop(sqlite_store: Store) -> None:
    token = StopSignal()
    entered = threading.Event()

    @tool
    def long_job() -> str:
        """Waits for work, stopping with its run."""
        entered.set()
        return "stopped early" if current_stop_signal().wait(10) else "ran out"

    script = {
        "rules": [{"match": "", "steps": [{"tool_calls": [{"id": "c", "name": "long_job"}]}]}]
    }
    spec = AgentSpec(provider=ScriptedProvider(script), tools=[long_job])
    agent = Agent("stop-tool", spec, sqlite_store, stop_signal=token)
    stopper = threading.Thread(target=_set_after, args=(entered, token))
    stopper.start()
    state = agent.run("go")
    stopper.join()
    assert state.status == "cancelled"
    (part,) = sqlite_store.messages("stop-tool")[-1].tool_results
    assert part.content == "stopped early"  # the tool's own result is kept


def test_stopping_a_suspended_run_settles_its_wait(sqlite_store: Store) -> None:
    @tool(requires_approval=True)
    def wire_money(amount: int) -> str:
        """Send money."""
        raise AssertionError("never approved")

    calls = [{"id": "w", "name": "wire_money", "arguments": {"amount": 5}}]
    script = {"rules": [{"match": "", "steps": [{"tool_calls": calls}, {"text": "x"}]}]}
    spec = AgentSpec(provider=ScriptedProvider(script), tools=[wire_money])
    agent = Agent("stop-wait", spec, sqlite_store)
    assert agent.run("pay").status == "suspended"
    outcome = stop_thread(sqlite_store, "stop-wait")
    assert (outcome.stopped, outcome.status, outcome.running) == (True, "cancelled", False)
    (part,) = agent.history()[-1].tool_results
    assert part.content == CALL_STOPPED
    again = stop_thread(sqlite_store, "stop-wait")
    assert (again.stopped, again.status) == (False, "cancelled")
    follow = Agent("stop-wait", AgentSpec(provider=story(1)), sqlite_store)
    assert follow.run("next").status == "completed"


def test_stopping_a_finished_run_changes_nothing(sqlite_store: Store) -> None:
    agent = Agent("stop-done", AgentSpec(provider=story(1)), sqlite_store)
    assert agent.run("hi").status == "completed"
    before = agent.inspect()
    outcome = stop_thread(sqlite_store, "stop-done")
    assert (outcome.stopped, outcome.status) == (False, "completed")
    assert agent.inspect() == before
    assert stop_thread(sqlite_store, "never-seen").stopped is False


@pytest.mark.parametrize(
    ("adapter", "ending"),
    [
        (lambda: NativeAdapter(), ["step-finished", "cancelled", "done"]),
        (lambda: VercelAIAdapter(), ["text-end", "abort"]),
        (lambda: AGUIAdapter("stop-frames"), ["STEP_FINISHED", "RUN_FINISHED"]),
    ],
    ids=["native", "vercel", "agui"],
)
def test_each_protocol_ends_a_stopped_run_its_own_way(
    sqlite_store: Store, adapter: Any, ending: list[str]
) -> None:
    token = StopSignal()
    thread = f"stop-frames-{len(ending)}-{ending[-1].lower()}"
    agent = Agent(thread, AgentSpec(provider=ClosingProvider()), sqlite_store, stop_signal=token)
    agent.set_stream_adapter(adapter)
    events: list[ProtocolEvent] = []
    for event in agent.stream("go"):
        events.append(event)
        if event.type in ("text", "text-delta", "TEXT_MESSAGE_CONTENT"):
            token.set()
    kinds = [e.type for e in events]
    assert kinds[-len(ending) :] == ending
    assert "error" not in kinds and "RUN_ERROR" not in kinds
    # Every text part opened is closed before the end.
    opened = sum(k in ("text-start", "TEXT_MESSAGE_START") for k in kinds)
    closed = sum(k in ("text-end", "TEXT_MESSAGE_END") for k in kinds)
    assert opened == closed
    if ending[-1] == "done":
        assert events[-1].data["status"] == "cancelled"
    if ending[-1] == "abort":
        assert events[-1].data.get("reason") == "user"


def test_a_message_from_history_reloads_as_stopped(sqlite_store: Store) -> None:
    token = StopSignal()
    agent = Agent(
        "stop-reload", AgentSpec(provider=ClosingProvider()), sqlite_store, stop_signal=token
    )
    for item in agent.stream("go"):
        if isinstance(item, TextChunk):
            token.set()
    stored: Message = agent.history()[-1]
    again = Message.from_stored(stored.id, stored.role, stored.content_json(), stored.meta)
    assert again.meta["stopped"] is True
