"""The Agent: start turns, stage continuations, recover runs, on one durable thread.

An Agent object holds no run state of its own: everything is read from and written to
the Store, so a fresh Agent in any process continues where another left off.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from relayline.shared.agent.loop import RunLoop
from relayline.shared.agent.segment import (
    AdapterFactory,
    ChannelFactory,
    drain,
    run_segment,
    state_of,
)
from relayline.shared.agent.spec import AgentSpec, RunState
from relayline.shared.batch import request_from_record
from relayline.shared.errors import (
    ExpiredError,
    InputTranslationError,
    RunFailedError,
    RunNotWaitingError,
    StaleRunError,
    WorkflowError,
)
from relayline.shared.ids import MESSAGE_ID, RUN_ID, invalid_thread_id, is_thread_id, new_id
from relayline.shared.ids import THREAD_ID as THREAD_ID  # re-exported: it lived here
from relayline.shared.interrupts import (
    TIMEOUT_ERROR,
    Answer,
    Answers,
    ApprovalRequest,
    InterruptRequest,
    ToolResultsRequest,
)
from relayline.shared.jobs import ANONYMOUS
from relayline.shared.messages import Message
from relayline.shared.persistence.store import RunRecord, Store
from relayline.shared.protocols.translator import InputTranslator
from relayline.shared.records import Accepted, Checkpoint
from relayline.shared.stop_signal import StopSignal
from relayline.shared.texts import EMPTY_TURN, NO_MATCH
from relayline.shared.tools import FrontendTool, FrontendToolJSON

Segment = Generator[Any, None, RunState]


class Agent:
    """One thread's agent. Cheap to build; build one per request or task."""

    def __init__(
        self,
        thread_id: str,
        spec: AgentSpec,
        store: Store,
        *,
        owner: str = ANONYMOUS,
        lease_seconds: float = 600.0,
        executor: str | None = None,
        stop_signal: StopSignal | None = None,
        stops_watched: bool = False,
    ) -> None:
        if not is_thread_id(thread_id):
            raise InputTranslationError(invalid_thread_id(thread_id))
        self.thread_id = thread_id
        self.spec = spec
        self.store = store
        self.owner = owner
        self.lease_seconds = lease_seconds
        #: who executes (a Celery task id): a redelivery of the same task may take over
        #: its own lost run at once instead of waiting for the lease to expire
        self.executor = executor
        #: the stop signal its runs watch (the worker sets it when a stop arrives)
        self.stop_signal = stop_signal if stop_signal is not None else StopSignal()
        #: a watcher sets ``stop_signal`` when a stop is announced (the worker's): a run this
        #: Agent just admitted need not read its stop back before the first model call
        self.stops_watched = stops_watched
        self._adapter_factory: AdapterFactory | None = None
        self._channel_factory: ChannelFactory | None = None
        self.on_channel_error: Callable[[BaseException], None] | None = None

    def set_stream_adapter(self, factory: AdapterFactory | None) -> None:
        """Build a fresh adapter for every segment (None: native chunks are yielded)."""
        self._adapter_factory = factory

    def set_channel(self, factory: ChannelFactory | None) -> None:
        """Build a fresh channel for every segment; it also gets the segment's lifecycle."""
        self._channel_factory = factory

    # reading ---------------------------------------------------------------------

    def inspect(self) -> RunRecord | None:
        """The thread's current run as persisted, or None."""
        return self.store.current_run(self.thread_id)

    def state(self) -> RunState | None:
        record = self.inspect()
        return None if record is None else state_of(record)

    def history(self, *, limit: int | None = None, before: str | None = None) -> list[Message]:
        return self.store.messages(self.thread_id, limit=limit, before=before)

    # new turns -------------------------------------------------------------------

    def run(self, message: str | Message, **options: Any) -> RunState:
        """Run a new turn to completion, suspension or failure."""
        return self._finish(self.stream(message, **options))

    def stream(
        self,
        message: str | Message,
        *,
        run_id: str | None = None,
        frontend_tools: Sequence[FrontendTool] = (),
    ) -> Segment:
        """A lazy generator of the turn's output; admission happens on the first ``next``."""
        user = _user_message(message)
        if run_id is not None and not RUN_ID.match(run_id):
            raise InputTranslationError(f"Invalid run id {run_id!r}.")
        extra = self._checked_frontend_tools(frontend_tools)

        def admit() -> tuple[RunLoop, bool]:
            record, history = self.store.admit_run(
                self.thread_id,
                run_id or new_id("run"),
                owner=self.owner,
                start={"message": user.id, "frontendTools": extra},
                first_messages=[user],
                lease_expires_at=self._lease(),
                # Stamped in the same transaction: one commit before the first output.
                checkpoint=self._stamped_checkpoint(Checkpoint()),
            )
            loop = RunLoop(
                self.spec,
                self.store,
                record,
                self.lease_seconds,
                self.stop_signal,
                history=history,
                admitted=self.stops_watched,
            )
            return loop, True

        return self._segment(admit)

    # continuations -----------------------------------------------------------------

    def submit_tool_results(self, results: Mapping[str, Any]) -> Continuation:
        """Stage results for the frontend calls the run waits on (read-only until run)."""
        _require_map(
            results, "Tool results must be a map of call id to {'result': ...} or {'error': '...'}."
        )
        return self._stage(lambda request: dict(results), expect=ToolResultsRequest)

    def submit_approval_decisions(self, decisions: Mapping[str, Any]) -> Continuation:
        """Stage approval decisions: call id -> "approve" | "reject" | ["reject", reason]."""
        _require_map(
            decisions,
            'Approval decisions must be a map of call id to "approve", '
            '"reject" or ["reject", "<reason>"].',
        )
        return self._stage(lambda request: dict(decisions), expect=ApprovalRequest)

    def submit_inputs(
        self, payload: Mapping[str, Any], translator: InputTranslator
    ) -> Continuation:
        """Stage a client payload translated against the persisted interrupt."""
        if not isinstance(payload, Mapping):
            raise InputTranslationError("The continuation payload must be a JSON object.")
        return self._stage(lambda request: translator.translate(payload, request), expect=None)

    def expire_wait(self) -> Continuation:
        """Stage the timeout of an expired frontend wait: pending calls settle as errors."""
        record, request = self._suspended()
        if not isinstance(request, ToolResultsRequest) or not request.expired():
            raise WorkflowError("The run is not waiting on an expired frontend wait.")
        answers: Answers = {call_id: {"error": TIMEOUT_ERROR} for call_id in request.pending_ids}
        return Continuation(self, record.run_id, record.attempt, answers)

    def recover(self, run_id: str | None = None, attempt: int | None = None) -> Continuation:
        """Take over a ``running`` run whose worker was lost and continue it from its
        last checkpoint. Give the attempt the lost worker held (a redelivered task
        knows it); without one, the run's lease must have expired."""
        record = self.inspect()
        if record is None or record.status != "running":
            raise WorkflowError(f"There is no running run to recover on thread '{self.thread_id}'.")
        _check_fence(record, run_id or record.run_id, attempt or record.attempt)
        lease = record.lease_expires_at
        mine = self.executor is not None and record.checkpoint.get("executor") == self.executor
        if attempt is None and not mine and lease is not None and lease > datetime.now(UTC):
            raise WorkflowError(
                f"Run '{record.run_id}' holds a live lease until {lease.isoformat()}."
            )
        return Continuation(self, record.run_id, record.attempt, None)

    # internals ------------------------------------------------------------------------

    def _lease(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.lease_seconds)

    def _loop(self, record: RunRecord) -> RunLoop:
        return RunLoop(self.spec, self.store, record, self.lease_seconds, self.stop_signal)

    def _segment(self, admit: Callable[[], tuple[RunLoop, bool]]) -> Segment:
        return run_segment(
            admit, self._adapter_factory, self._channel_factory, self.on_channel_error
        )

    def _finish(self, segment: Segment) -> RunState:
        try:
            return drain(segment)
        except RunFailedError:
            state = self.state()
            assert state is not None  # a failed segment always follows an admitted run
            return state

    def _stamped(self, record: RunRecord) -> Checkpoint:
        return self._stamped_checkpoint(record.checkpoint)

    def _stamped_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        """``checkpoint`` naming this executor, so its own redelivery may take over."""
        if self.executor is None:
            return checkpoint
        return {**checkpoint, "executor": self.executor}

    def _checked_frontend_tools(self, tools: Sequence[FrontendTool]) -> list[FrontendToolJSON]:
        backend = {t.name for t in self.spec.tools}
        seen: set[str] = set()
        for item in tools:
            if item.name in backend:
                raise InputTranslationError(
                    f"Frontend tool '{item.name}' collides with a backend tool."
                )
            if item.name in seen:
                raise InputTranslationError(f"Duplicate frontend tool '{item.name}'.")
            seen.add(item.name)
        return [t.to_json() for t in tools]

    def _suspended(self) -> tuple[RunRecord, InterruptRequest]:
        record = self.inspect()
        if record is None:
            raise InputTranslationError("There is no persisted run to continue.")
        request = request_from_record(record)
        if request is None:
            # A well-formed answer that came too late or too early (another answer won,
            # the run went on or ended): a conflict with the run's state, which the
            # refusal carries, not bad input.
            raise RunNotWaitingError(
                f"Run '{record.run_id}' is {record.status}: there is no current "
                "interruption to answer.",
                code="RUN_NOT_WAITING",
                run_id=record.run_id,
                status=record.status,
            )
        return record, request

    def _stage(
        self,
        answers_for: Callable[[InterruptRequest], Answers],
        expect: type | None,
    ) -> Continuation:
        record, request = self._suspended()
        if request.expired():
            raise ExpiredError(f"Interrupt '{request.interrupt_id}' has expired.")
        if expect is ToolResultsRequest and isinstance(request, ApprovalRequest):
            first = ", ".join(f"'{a.id}'" for a in request.actions)
            raise WorkflowError(f"Tool call {first} is awaiting approval, not execution results.")
        if expect is ApprovalRequest and isinstance(request, ToolResultsRequest):
            raise WorkflowError("The run waits for frontend tool results, not approval decisions.")
        answers = answers_for(request)
        if not answers:
            raise InputTranslationError(NO_MATCH)
        fresh = _validate(request, answers)  # only what the run has not accepted yet
        return Continuation(self, record.run_id, record.attempt, answers, adds_answers=bool(fresh))

    def _admit_continuation(
        self, run_id: str, attempt: int, answers: Answers | None, stop_after: bool
    ) -> tuple[RunLoop, bool]:
        record = self.inspect()
        _check_fence(record, run_id, attempt)
        assert record is not None  # _check_fence refuses a missing run
        loop = self._loop(record)
        if answers is None:  # recovery of a running run
            loop.write(attempt=record.attempt + 1, checkpoint=self._stamped(record))
            loop.took_over = True
            return loop, True
        request = request_from_record(record)
        if request is None:
            raise WorkflowError(f"Run '{record.run_id}' is '{record.status}', not suspended.")
        accepted: Accepted = {**record.accepted}
        if isinstance(request, ApprovalRequest):
            decisions = request.validate_decisions(answers)
            fresh = bool(decisions)
            accepted["decisions"] = {**record.accepted.get("decisions", {}), **decisions}
        else:
            results = request.validate_results(answers)
            fresh = bool(results)
            accepted["results"] = {**record.accepted.get("results", {}), **results}
        if not fresh:
            return loop, False  # an identical repeat: accepted, nothing to do
        checkpoint = self._stamped(record)
        if stop_after and isinstance(request, ToolResultsRequest):
            checkpoint = {**checkpoint, "stopAfterBatch": True}
        loop.write(
            status="running",
            attempt=record.attempt + 1,
            interrupt=None,
            accepted=accepted,
            checkpoint=checkpoint,
        )
        return loop, True


class Continuation:
    """A staged continuation. Nothing ran and nothing was written until ``run()`` or
    ``events()``; both refuse when the run moved on since staging."""

    def __init__(
        self,
        agent: Agent,
        run_id: str,
        attempt: int,
        answers: Answers | None,
        *,
        adds_answers: bool = True,
    ) -> None:
        self.agent = agent
        self.run_id = run_id
        self.attempt = attempt
        self.answers = answers
        #: False for an identical repeat of answers the run already accepted: running it
        #: changes nothing (it repeats the interruption), so it competes with no one
        self.adds_answers = adds_answers
        self.stop_after = False

    def stop_after_tool_call(self, enabled: bool = True) -> Continuation:
        """Record the results and complete the turn without another model call once the
        batch is settled (AG-UI ``forwardedProps.stopAfterToolCall``)."""
        self.stop_after = enabled
        return self

    def events(self) -> Segment:
        return self.agent._segment(
            lambda: self.agent._admit_continuation(
                self.run_id, self.attempt, self.answers, self.stop_after
            )
        )

    def run(self) -> RunState:
        return self.agent._finish(self.events())


def _check_fence(record: RunRecord | None, run_id: str, attempt: int) -> None:
    if record is None or record.run_id != run_id:
        current = "none" if record is None else record.run_id
        wf = "?" if record is None else record.thread_id
        raise StaleRunError(
            f"Stale continuation for workflow ID '{wf}': expected run '{run_id}', "
            f"current run is '{current}'.",
        )
    if record.attempt != attempt:
        raise StaleRunError(
            f"Stale continuation for workflow ID '{record.thread_id}': expected execution "
            f"attempt {attempt}, current attempt is {record.attempt}.",
        )


def _validate(request: InterruptRequest, answers: Mapping[str, Any]) -> Mapping[str, Answer]:
    if isinstance(request, ApprovalRequest):
        return request.validate_decisions(answers)
    return request.validate_results(answers)


def _require_map(value: Any, message: str) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise InputTranslationError(message)


def _user_message(message: str | Message) -> Message:
    if isinstance(message, Message):
        if message.role != "user" or not MESSAGE_ID.match(message.id):
            raise InputTranslationError(
                "A new turn needs a user message with an id of 1-64 characters."
            )
        if not message.text.strip():
            raise InputTranslationError(EMPTY_TURN)
        return message
    if not isinstance(message, str) or not message.strip():
        raise InputTranslationError(EMPTY_TURN)
    return Message.user(message)
