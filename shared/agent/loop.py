"""The agent loop: inference, then the batch's tool calls, until the turn completes
or must wait for a person or the browser.

Every step ends in one compare-and-set write of the run (with the messages it
produced), so any process can pick the run up from its last write. A backend tool's
result is written as soon as it returns: a retry never executes it again. Before it
runs, the call is marked started (a fenced write, so an executor that lost the run
never starts a tool); a recovery that finds a started call without a result re-runs it
only if the tool is declared idempotent, else settles it with ``INTERRUPTED_ERROR``.

A stop (``Store.request_stop``; the worker sets the loop's ``StopSignal`` when it
hears of one) is noticed at the next model delta, before each model call and between
tools: the loop closes the model stream, keeps the partial answer marked ``stopped``,
settles every open call as stopped and writes the run ``cancelled`` in one write.
A backend tool already running finishes first, unless it watches ``current_stop_signal()``.
The writes that end a run another way (completed, suspended) are refused once a stop is
recorded (``write_run(unless_stopped=True)``): a stop that lands after the last check
still ends the run ``cancelled``, so a stop answered ``stopped: true`` always is one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from opentelemetry.trace import StatusCode

from relayline.shared import batch as batches
from relayline.shared import metrics
from relayline.shared.agent.spec import AgentSpec
from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from relayline.shared.errors import ConflictError, ProviderError, ToolFailedError
from relayline.shared.errors import StepLimitError as StepLimitError  # re-exported: it lived here
from relayline.shared.events import Activity, RunUsage, StepFinished, StepStarted
from relayline.shared.failures import failure_of, redact_keys
from relayline.shared.interrupts import (
    TIMEOUT_ERROR,
    ApprovalRequest,
    InterruptJSON,
    ToolResultsRequest,
)
from relayline.shared.jsonutil import dumps
from relayline.shared.messages import Message, ToolCallPart, new_id
from relayline.shared.persistence.outage import DATABASE_RETRY_SECONDS, through_outage
from relayline.shared.persistence.store import (
    UNCHANGED,
    RunRecord,
    StopRequestedError,
    Store,
    Unchanged,
)
from relayline.shared.providers.base import (
    MetaDelta,
    ModelDelta,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from relayline.shared.records import (
    Accepted,
    BatchJSON,
    CallJSON,
    Checkpoint,
    ResultEntry,
    RunStatus,
    UsageJSON,
)
from relayline.shared.stop_signal import StopSignal
from relayline.shared.telemetry import tracer
from relayline.shared.tools import AnyTool, stop_signal_scope

Item = Any  # a chunk or a portable event
T = TypeVar("T")
logger = logging.getLogger("relayline.agent")

#: the result the model sees for a non-idempotent call a lost worker left mid-way
INTERRUPTED_ERROR = "The tool was interrupted; it may or may not have taken effect."


class RunLoop:
    """Advances one run. ``record`` is always the newest version this process wrote.

    Its writes and reads are retried through a database outage for up to
    ``database_retry_seconds`` (``persistence.outage``): a tool that completed while the
    server was down keeps its result, written once the server is back."""

    database_retry_seconds: float = DATABASE_RETRY_SECONDS

    def __init__(
        self,
        spec: AgentSpec,
        store: Store,
        record: RunRecord,
        lease_seconds: float,
        stop_signal: StopSignal | None = None,
        *,
        history: Sequence[Message] | None = None,
        admitted: bool = False,
    ):
        """``history``: the thread's messages as ``record`` was written with them (the
        first model call reads none); ``admitted``: ``record`` was just created by this
        process and a watcher sets ``stop_signal`` on a stop, so the first stop check needs
        no read (the record holds no stop yet; one asked for since comes by the token)."""
        self.spec = spec
        self.store = store
        self.record = record
        self.lease_seconds = lease_seconds
        self.tools: dict[str, AnyTool] = spec.tool_map(batches.dynamic_tools(record.start))
        self.last_text: str | None = None
        self._answer: tuple[str, list[str], list[str], dict[str, Any]] = ("", [], [], {})
        #: set from another thread when a stop arrives; ``stopping`` also reads the record
        self.stop_signal = stop_signal if stop_signal is not None else StopSignal()
        self._history = None if history is None else tuple(history)
        self._stop_read = admitted
        #: admitted as the takeover of a lost writer's run (a recovery): the segment
        #: fences the lost writer's log and tells its readers (channels.SegmentLog)
        self.took_over = False

    # persistence ---------------------------------------------------------------

    def _lease(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.lease_seconds)

    def write(
        self,
        append: Sequence[Message] = (),
        *,
        status: RunStatus | Unchanged = UNCHANGED,
        attempt: int | Unchanged = UNCHANGED,
        interrupt: InterruptJSON | Unchanged | None = UNCHANGED,
        accepted: Accepted | Unchanged = UNCHANGED,
        checkpoint: Checkpoint | Unchanged = UNCHANGED,
        error: str | Unchanged | None = UNCHANGED,
        lease_expires_at: datetime | Unchanged | None = UNCHANGED,
        fresh: bool = False,
        unless_stopped: bool = False,
    ) -> RunRecord:
        """Write the run (``Store.write_run``); the lease is renewed unless given.
        Retried through a database outage; a write whose commit the outage hid (the
        connection broke after it) is recognised on the retry and kept."""
        base = self.record
        tries = 0

        def write_once() -> RunRecord:
            nonlocal tries
            tries += 1
            try:
                return self.store.write_run(
                    base,
                    append=append,
                    status=status,
                    attempt=attempt,
                    interrupt=interrupt,
                    accepted=accepted,
                    checkpoint=checkpoint,
                    error=error,
                    lease_expires_at=(
                        self._lease() if lease_expires_at is UNCHANGED else lease_expires_at
                    ),
                    fresh=fresh and tries == 1,  # a retry looks up what the first stored
                    unless_stopped=unless_stopped,
                )
            except StopRequestedError:
                raise
            except ConflictError:
                # Only a retry can meet its own earlier try's commit.
                committed = (
                    None if tries == 1 else self._committed(base, status, accepted, checkpoint)
                )
                if committed is None:
                    raise
                return committed

        self.record = through_outage(
            write_once, what=f"run {base.run_id}'s write", budget=self.database_retry_seconds
        )
        return self.record

    def _committed(
        self,
        base: RunRecord,
        status: RunStatus | Unchanged,
        accepted: Accepted | Unchanged,
        checkpoint: Checkpoint | Unchanged,
    ) -> RunRecord | None:
        """The run as an earlier try of this write left it, when that try committed
        before its connection broke (the next version, holding what it wrote); else None
        (another process wrote the run: the conflict stands)."""
        found = self.store.run(base.thread_id, base.run_id)
        if found is None or found.version != base.version + 1 or found.attempt != base.attempt:
            return None
        same = (
            (status is UNCHANGED or found.status == status)
            and (accepted is UNCHANGED or found.accepted == accepted)
            and (checkpoint is UNCHANGED or found.checkpoint == checkpoint)
        )
        return found if same else None

    def _read(self, what: str, read: Callable[[], T]) -> T:
        """A read of the loop, retried through a database outage like its writes."""
        return through_outage(read, what=what, budget=self.database_retry_seconds)

    def stopped_meanwhile(self, error: StopRequestedError) -> None:
        """A stop was recorded after the last check, as the run was about to complete
        or suspend: the stop was answered ``stopped: true``, so the run ends
        ``cancelled`` (the caller writes it) rather than overwriting it."""
        self.record = error.record
        self.stop_signal.set()
        logger.info(
            "run %s of thread %s: stopped as it ended; written cancelled",
            self.record.run_id,
            self.record.thread_id,
        )

    def _batch(self) -> BatchJSON:
        batch = self.record.checkpoint.get("batch")
        assert batch is not None  # called only while a batch is open
        return batch

    def fail(self, error: BaseException) -> None:
        """Record the failure: ``error`` is the owner's message, the checkpoint's
        ``failure`` its code and the operator's detail (``relayline.shared.failures``).
        A process fenced out by another writes nothing."""
        failure = failure_of(error)
        checkpoint: Checkpoint = {**self.record.checkpoint, "failure": failure.stored()}
        self.write(
            status="failed",
            error=failure.message,
            checkpoint=checkpoint,
            interrupt=None,
            lease_expires_at=None,
        )

    # the loop ------------------------------------------------------------------

    def stopping(self) -> bool:
        """Whether a stop was asked for: the token, or the durable record (a stop the
        worker's watcher missed, or one asked for before this process took the run)."""
        if self.stop_signal.is_set():
            return True
        if self._stop_read:  # the record is the admission's own: nothing to read yet
            self._stop_read = False
            return False
        thread_id, run_id = self.record.thread_id, self.record.run_id
        if self.record.stop_requested is not None or self._read(
            "the stop flag", lambda: self.store.stop_requested(thread_id, run_id)
        ):
            self.stop_signal.set()
            return True
        return False

    def stop(self, partial: Message | None = None, base: Checkpoint | None = None) -> RunRecord:
        """End the run as ``cancelled`` in one write: the partial answer (marked
        ``stopped``) and, when a tool batch is open, its tool message with every call
        that has no outcome settled as stopped. ``base``: the checkpoint to write from
        (default: the record's)."""
        append: list[Message] = []
        if partial is not None and (partial.text or partial.reasoning):
            append.append(partial)
        accepted = self.record.accepted
        batch = self.record.checkpoint.get("batch")
        if batch is not None:
            accepted = batches.stopped(batch, accepted)
            append.append(batches.tool_message(batch, accepted))
        start = self.record.checkpoint if base is None else base
        checkpoint: Checkpoint = {**start, "batch": None, "toolStarted": None}
        return self.write(
            append,
            status="cancelled",
            interrupt=None,
            accepted=accepted,
            checkpoint=checkpoint,
            lease_expires_at=None,
        )

    def _cancelled(self) -> bool:
        # A method, not an inline test: a step may have written the record meanwhile.
        return self.record.status == "cancelled"

    def advance(self) -> Generator[Item, None, RunRecord]:
        if "usage" in self.record.checkpoint:  # the run's tokens so far, for the terminal
            yield RunUsage(dict(self.record.checkpoint["usage"]))
        # A stop is read once per step: ``_settle`` before its first tool and between
        # tools, ``_respond`` before the model call.
        while True:
            if self.record.checkpoint.get("batch") is not None:
                yield from self._settle()
                if self.record.status in ("suspended", "cancelled"):
                    return self.record
                if self.record.checkpoint.get("stopAfterBatch"):
                    checkpoint: Checkpoint = {**self.record.checkpoint, "stopAfterBatch": False}
                    try:
                        return self.write(
                            status="completed",
                            checkpoint=checkpoint,
                            interrupt=None,
                            lease_expires_at=None,
                            unless_stopped=True,
                        )
                    except StopRequestedError as stopped:
                        self.stopped_meanwhile(stopped)
                        return self.stop(base=checkpoint)
                continue
            calls = self.record.checkpoint.get("modelCalls", 0)
            if calls >= self.spec.max_steps:
                raise StepLimitError(
                    f"The run reached its limit of {self.spec.max_steps} model calls "
                    "without finishing the turn."
                )
            yield from self._infer(calls + 1)
            if self._cancelled():
                return self.record
            if self.record.checkpoint.get("batch") is None:
                return self.record  # _infer completed the run with the answer

    def _infer(self, step: int) -> Generator[Item, None, None]:
        message_id = new_id("msg")
        history, self._history = self._history, None  # only the first step's is known
        if history is None:
            thread_id = self.record.thread_id
            history = tuple(self._read("the history", lambda: self.store.messages(thread_id)))
        request = ModelRequest(
            system_prompt=self.spec.system_prompt,
            messages=history,
            tools=tuple(
                ToolSchema(t.name, t.description, t.input_schema) for t in self.tools.values()
            ),
            stop_signal=self.stop_signal,
        )
        yield StepStarted("model", {"step": step})
        # Not the current span: the segment yields while it is open (shared.telemetry).
        span = tracer.start_span("relayline.model_call", attributes=self._span_attributes(step))
        try:
            assistant, calls = yield from self._respond(request, message_id)
        except Exception as exc:
            if self.stop_signal.is_set():  # the stop closed the stream: not a failure
                assistant, calls = self._partial(), []
            else:
                metrics.MODEL_CALLS.labels("error").inc()
                span.record_exception(exc)
                span.set_status(StatusCode.ERROR)
                span.end()
                # Close the step the client saw open, then fail the run with the error.
                yield StepFinished("model", {"step": step, "failed": True})
                raise
        metrics.MODEL_CALLS.labels("stopped" if self.stop_signal.is_set() else "ok").inc()
        usage_seen = assistant.meta.get("usage")
        if isinstance(usage_seen, dict):
            for kind in ("input", "output"):
                if isinstance(usage_seen.get(kind), int):
                    metrics.TOKENS.labels(kind).inc(usage_seen[kind])
            span.set_attribute("gen_ai.usage.input_tokens", usage_seen.get("input") or 0)
            span.set_attribute("gen_ai.usage.output_tokens", usage_seen.get("output") or 0)
        span.set_attribute("relayline.stopped", self.stop_signal.is_set())
        span.end()
        self.last_text = assistant.text
        if self.stop_signal.is_set():
            stopped = dataclasses.replace(
                assistant, tool_calls=(), meta={**assistant.meta, "stopped": True}
            )
            self.stop(stopped)
            yield StepFinished("model", {"step": step, "stopped": True})
            return
        checkpoint: Checkpoint = {**self.record.checkpoint, "modelCalls": step, "batch": None}
        usage = _add_usage(checkpoint.get("usage"), assistant.meta.get("usage"))
        if usage is not None:
            checkpoint["usage"] = usage
        if calls:
            checkpoint["batch"] = {
                "messageId": message_id,
                "resultMessageId": new_id("msg"),
                "calls": calls,
            }
        # ``fresh``: the answer's id was made at this step's start (new_id), never stored.
        if calls:
            self.write(append=[assistant], checkpoint=checkpoint, accepted=Accepted(), fresh=True)
        else:  # the answer ends the turn: one commit for both (fewer commits per turn)
            try:
                self.write(
                    append=[assistant],
                    checkpoint=checkpoint,
                    accepted=Accepted(),
                    status="completed",
                    interrupt=None,
                    lease_expires_at=None,
                    fresh=True,
                    unless_stopped=True,
                )
            except StopRequestedError as stopped:
                # The whole answer was streamed; it is kept, marked stopped like any other.
                self.stopped_meanwhile(stopped)
                kept = dataclasses.replace(assistant, meta={**assistant.meta, "stopped": True})
                self.stop(kept, base=checkpoint)
                yield StepFinished("model", {"step": step, "stopped": True})
                return
        yield StepFinished("model", {"step": step})
        if usage is not None:
            yield RunUsage(dict(usage))
        for call in calls:
            yield ToolCallChunk(message_id, batches.call_info(call, Accepted(), with_result=False))

    def _respond(
        self, request: ModelRequest, message_id: str
    ) -> Generator[Item, None, tuple[Message, list[CallJSON]]]:
        """Stream one model response as chunks; return it as a message and its calls."""
        text: list[str] = []
        reasoning: list[str] = []
        pieces: dict[int, dict[str, Any]] = {}
        meta: dict[str, Any] = {}
        #: what the answer holds so far, for a stop that closes the stream mid-way
        self._answer = (message_id, text, reasoning, meta)
        if self.stopping():  # asked for since the step began: no model call at all
            return self._partial(), []
        for delta in _until_stopped(self.spec.provider.stream(request), self.stop_signal):
            if isinstance(delta, TextDelta) and delta.text:
                text.append(delta.text)
                yield TextChunk(message_id, delta.text)
            elif isinstance(delta, ReasoningDelta) and delta.text:
                reasoning.append(delta.text)
                yield ReasoningChunk(message_id, delta.text)
            elif isinstance(delta, ToolCallDelta):
                piece = pieces.setdefault(delta.index, {"id": None, "name": None, "args": ""})
                piece["id"] = piece["id"] or delta.id
                piece["name"] = piece["name"] or delta.name
                piece["args"] += delta.arguments
                tool = self.tools.get(piece["name"] or "")
                if delta.arguments and piece["id"] and not (tool and tool.redact):
                    yield ToolArgumentChunk(
                        message_id, piece["name"] or "", piece["id"], delta.arguments
                    )
            elif isinstance(delta, Usage):
                meta["usage"] = {"input": delta.input_tokens, "output": delta.output_tokens}
            elif isinstance(delta, MetaDelta):
                meta[delta.key] = delta.value
        if self.stop_signal.is_set():
            return self._partial(), []
        calls = [self._call(pieces[i]) for i in sorted(pieces)]
        assistant = Message(
            id=message_id,
            role="assistant",
            text="".join(text),
            reasoning="".join(reasoning),
            tool_calls=tuple(ToolCallPart(c["id"], c["name"], c["inputs"]) for c in calls),
            meta=meta,
        )
        return assistant, calls

    def _span_attributes(self, step: int | None = None) -> dict[str, str | int]:
        attributes: dict[str, str | int] = {
            "relayline.thread_id": self.record.thread_id,
            "relayline.run_id": self.record.run_id,
            "relayline.attempt": self.record.attempt,
        }
        if step is not None:
            attributes["relayline.step"] = step
        return attributes

    def _partial(self) -> Message:
        """The answer streamed so far, without its unfinished tool calls."""
        message_id, text, reasoning, meta = self._answer
        return Message(
            id=message_id,
            role="assistant",
            text="".join(text),
            reasoning="".join(reasoning),
            meta=meta,
        )

    def _call(self, piece: dict[str, Any]) -> CallJSON:
        name = piece["name"]
        tool = self.tools.get(name or "")
        if tool is None:
            raise _model_error(f"The model called the unknown tool {name!r}.")
        try:
            inputs = json.loads(piece["args"]) if piece["args"].strip() else {}
        except json.JSONDecodeError as exc:
            raise _model_error(f"The model sent invalid JSON arguments for tool {name!r}.") from exc
        if not isinstance(inputs, dict):
            raise _model_error(f"The model sent non-object arguments for tool {name!r}.")
        return {
            "id": piece["id"] or new_id("call"),
            "name": name,
            "inputs": inputs,
            "description": tool.description or None,
            "deferred": tool.deferred,
            "approval": tool.requires_approval,
            "redact": list(tool.redact),
        }

    def _settle(self) -> Generator[Item, None, None]:
        batch = self._batch()
        if self.stopping():
            self.stop()  # the calls without an outcome are settled as stopped
            return
        if batches.undecided(batch, self.record.accepted):
            self._suspend(ApprovalRequest.event_name, batch)
            return
        for index, call in enumerate(batches.unexecuted_backend(batch, self.record.accepted)):
            if index and self.stopping():
                self.stop()  # between tools: the calls not yet run are settled as stopped
                return
            yield from self._execute(call)
        if batches.pending_frontend(batch, self.record.accepted):
            expires = batch.get("waitExpiresAt")
            if expires is None and self.spec.frontend_wait_timeout is not None:
                deadline = datetime.now(UTC) + timedelta(seconds=self.spec.frontend_wait_timeout)
                expires = deadline.isoformat()
            if expires is None or datetime.fromisoformat(expires) > datetime.now(UTC):
                self._suspend(ToolResultsRequest.event_name, {**batch, "waitExpiresAt": expires})
                return
            self._settle_timeouts(batch)
        results = batches.tool_message(batch, self.record.accepted)
        settled = self.record.accepted
        self.write(append=[results], checkpoint={**self.record.checkpoint, "batch": None})
        for call in batch["calls"]:
            if call["deferred"] or batches.is_rejected(call, settled):
                info = batches.call_info(call, settled, with_result=True)
                yield ToolResultChunk(info, batch["messageId"])

    def _execute(self, call: CallJSON) -> Generator[Item, None, None]:
        tool = self.tools.get(call["name"])
        activity = f"activity_{call['id']}"
        status = {"callId": call["id"], "toolName": call["name"]}
        yield Activity(activity, "tool", {**status, "status": "running", "durationMs": 0})
        started = time.perf_counter()
        entry: ResultEntry
        failed: Exception | None = None  # raised by a tool declared on_error="fail"
        interrupted = self.record.checkpoint.get("toolStarted") == call["id"]
        if interrupted and not (tool is not None and tool.idempotent):
            entry = {"error": INTERRUPTED_ERROR}  # it may have acted: never run it twice
        else:
            self.write(checkpoint={**self.record.checkpoint, "toolStarted": call["id"]})
            try:
                if tool is None:
                    raise LookupError(f"Tool '{call['name']}' is not available on this server.")
                attributes = {**self._span_attributes(), "relayline.tool": call["name"]}
                with (
                    tracer.start_as_current_span("relayline.tool", attributes=attributes),
                    stop_signal_scope(self.stop_signal),
                ):
                    entry = {"result": _result_text(tool.execute(call["inputs"]))}
            except Exception as exc:  # a tool's failure is the model's to handle
                # (and the client's to show: never with a key in it)
                entry = {"error": redact_keys(f"{type(exc).__name__}: {exc}")}
                if tool is not None and tool.on_error == "fail":
                    failed = exc  # unless the tool says it fails the run
        elapsed = round((time.perf_counter() - started) * 1000)
        accepted = self.record.accepted
        results = {**batches.results_of(accepted), call["id"]: entry}
        checkpoint: Checkpoint = {**self.record.checkpoint, "toolStarted": None}
        self.write(accepted={**accepted, "results": results}, checkpoint=checkpoint)
        outcome = "error" if "error" in entry else "ok"
        metrics.TOOL_EXECUTIONS.labels(call["name"], outcome).inc()
        yield Activity(activity, "tool", {**status, "status": outcome, "durationMs": elapsed})
        info = batches.call_info(call, self.record.accepted, with_result=True)
        yield ToolResultChunk(info, self._batch()["messageId"])
        if failed is not None:
            message = f"The tool '{call['name']}' failed: {entry['error']}"
            raise ToolFailedError(message, call["name"]) from failed

    def _settle_timeouts(self, batch: BatchJSON) -> None:
        accepted = self.record.accepted
        results = batches.results_of(accepted)
        for call in batches.pending_frontend(batch, accepted):
            results[call["id"]] = {"error": TIMEOUT_ERROR}
        self.write(accepted={**accepted, "results": results})

    def _suspend(self, event_name: str, batch: BatchJSON) -> None:
        number = self.record.checkpoint.get("interruptSeq", 0) + 1
        checkpoint: Checkpoint = {**self.record.checkpoint, "interruptSeq": number, "batch": batch}
        request = batches.request_for(event_name, number, batch, self.record.accepted)
        try:
            self.write(
                status="suspended",
                checkpoint=checkpoint,
                interrupt=request.to_json(),
                lease_expires_at=None,
                unless_stopped=True,
            )
        except StopRequestedError as stopped:
            self.stopped_meanwhile(stopped)
            self.stop()  # the calls it would have waited on are settled as stopped


def _model_error(message: str) -> ProviderError:
    """What the model sent cannot be used; said in relayline's own words, so its owner
    may read them as they are."""
    return ProviderError(message, advice=message)


def _until_stopped(
    deltas: Iterator[ModelDelta], stop_signal: StopSignal
) -> Generator[ModelDelta, None, None]:
    """The provider's deltas until the token is set; then the provider's stream is
    closed at once (a generator provider's ``finally`` runs, its response is released)."""
    try:
        for delta in deltas:
            if stop_signal.is_set():
                return
            yield delta
    finally:
        close = getattr(deltas, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _add_usage(total: UsageJSON | None, call: Any) -> UsageJSON | None:
    """The run's tokens so far plus one model call's (``meta["usage"]``; a count the
    provider did not report adds nothing)."""
    if not isinstance(call, dict):
        return total

    def tokens(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    base = total or {"input": 0, "output": 0}
    return {
        "input": base["input"] + tokens(call.get("input")),
        "output": base["output"] + tokens(call.get("output")),
    }


def _result_text(value: Any) -> Any:
    """A backend result as stored: JSON values as they are, anything else as text."""
    try:
        dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
