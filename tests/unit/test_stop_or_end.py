"""A stop and a run's own end decided in the database, on SQLite and PostgreSQL: a stop
recorded after the loop's last check (the worker's wake-up not heard yet) still ends the
run ``cancelled``, so the ``stopped: true`` it was answered holds; an end written first
makes the stop answer ``stopped: false`` with the status the run ended with."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec, tool
from relayline.shared.agent.stop import StopOutcome, stop_run, stop_thread
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.persistence.store import RunRecord, StopRequestedError
from relayline.shared.providers import ScriptedProvider
from relayline.shared.providers.base import ModelDelta, ModelRequest
from relayline.shared.records import Checkpoint, RunStart
from relayline.shared.texts import CALL_STOPPED


class StopAtTheEnd:
    """The scripted provider, calling ``at_end`` once its last delta was taken: a stop
    that reaches the database after the loop read its stop signal for the last time."""

    def __init__(self, script: dict[str, Any], at_end: Callable[[], None]) -> None:
        self.inner = ScriptedProvider(script)
        self.at_end = at_end

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        yield from self.inner.stream(request)
        self.at_end()


ANSWER = {"rules": [{"match": "", "steps": [{"text": "The whole answer."}]}]}


def test_a_stop_recorded_after_the_last_check_wins_over_the_completion(store: Store) -> None:
    answers: list[StopOutcome] = []
    provider = StopAtTheEnd(ANSWER, lambda: answers.append(stop_thread(store, "late-stop")))
    agent = Agent("late-stop", AgentSpec(provider=provider), store)

    state = agent.run("go")

    assert [(a.stopped, a.status) for a in answers] == [(True, "running")]
    assert state.status == "cancelled"  # not completed over the stop it was answered
    last = agent.history()[-1]
    assert last.text == "The whole answer." and last.meta.get("stopped") is True
    record = agent.inspect()
    assert record is not None and record.checkpoint.get("modelCalls") == 1
    again = stop_thread(store, "late-stop")  # a second stop finds it ended cancelled
    assert (again.stopped, again.status) == (False, "cancelled")


class StopJustBeforeSuspending(Store):
    """The store, with a stop arriving in the one moment the loop cannot see: after its
    last read of the stop, as it writes the run ``suspended``."""

    answers: list[StopOutcome]

    def write_run(self, record: RunRecord, **fields: Any) -> RunRecord:
        if fields.get("status") == "suspended":
            self.answers.append(stop_thread(self, record.thread_id))
        return super().write_run(record, **fields)


def test_a_stop_recorded_after_the_last_check_wins_over_the_suspension(
    database_url: str,
) -> None:
    @tool(requires_approval=True)
    def wire_money(amount: int) -> str:
        """Send money."""
        raise AssertionError("never approved")

    calls = [{"id": "w", "name": "wire_money", "arguments": {"amount": 5}}]
    script = {"rules": [{"match": "", "steps": [{"tool_calls": calls}, {"text": "x"}]}]}
    store = StopJustBeforeSuspending(database_url)
    store.answers = []
    try:
        spec = AgentSpec(provider=ScriptedProvider(script), tools=[wire_money])
        agent = Agent("late-wait", spec, store)

        state = agent.run("pay")

        assert [(a.stopped, a.status) for a in store.answers] == [(True, "running")]
        assert state.status == "cancelled" and state.interrupt is None
        (part,) = agent.history()[-1].tool_results
        assert part.content == CALL_STOPPED  # the call it would have waited on, settled
    finally:
        store.dispose()


def test_a_completion_written_first_makes_the_stop_answer_completed(store: Store) -> None:
    agent = Agent("end-first", AgentSpec(provider=ScriptedProvider(ANSWER)), store)
    assert agent.run("go").status == "completed"
    record = agent.inspect()
    assert record is not None
    outcome = stop_run(store, "end-first", record.run_id, wait=0)
    assert (outcome.stopped, outcome.run_id, outcome.status) == (False, record.run_id, "completed")
    assert agent.inspect() == record  # nothing written


def test_the_conditional_write_refuses_once_a_stop_is_recorded(store: Store) -> None:
    hello = Message.user("hi")
    record = store.begin_run(
        "cas",
        "run_cas",
        owner="o",
        start=RunStart(message=hello.id, frontendTools=[]),
        first_messages=[hello],
        lease_expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )
    stopped = store.request_stop("cas", "run_cas")
    assert stopped is not None and stopped.stop_requested is not None
    with pytest.raises(StopRequestedError) as refused:
        store.write_run(record, status="completed", checkpoint=Checkpoint(), unless_stopped=True)
    assert refused.value.record.status == "running"
    assert store.run("cas", "run_cas") == stopped  # nothing written
    # Other writes of the run (a checkpoint, the cancellation) are not fenced by it.
    store.write_run(record, status="cancelled")


def test_a_stop_waits_for_a_started_run_to_be_admitted(store: Store) -> None:
    # No run yet: the stop waits (bounded) and answers that nothing was stopped.
    outcome = stop_run(store, "not-yet", "run_none", wait=0.05)
    assert (outcome.stopped, outcome.status) == (False, None)
