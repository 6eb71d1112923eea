"""The Vercel AI SDK UI message stream (docs/reference/neuron-streaming-spec.md section 5.4),
as ``useChat`` reads it.

Every chunk carries only fields the ``ai`` package's chunk schema declares: the SDK
refuses anything else. One turn is one UI message: ``start`` (lazy, with the message
id) opens it, each inference after tool results is a new UI step, and the segment's
terminal is ``finish`` (also after an interrupt) or ``error`` (never followed by
``finish``). Frontend calls are dispatched (``tool-input-available``, which runs the
browser handler) only when the run suspends on them, after the batch is persisted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from relayline.shared.events import (
    Activity,
    Custom,
    ProtocolEvent,
    StepFinished,
    StepStarted,
    StreamEvent,
)
from relayline.shared.ids import new_id
from relayline.shared.interrupts import ApprovalRequest, InterruptRequest, ToolResultsRequest
from relayline.shared.jsonutil import dumps
from relayline.shared.protocols.adapter import StreamAdapter

HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "x-vercel-ai-ui-message-stream": "v1",
}

#: tool part states whose output the client already holds: never echoed back, so
#: frontend-owned JSON outputs are not replaced by their text form
KNOWN_OUTPUT_STATES = frozenset({"output-available", "output-error", "output-denied"})


def part_id(kind: str, message_id: str, index: int) -> str:
    """Wire id of the ``index``-th text or reasoning part of a stored message.

    Derived from the stored id, so ``ui_messages`` rebuilds the same ids on reload."""
    base = f"{kind}_{message_id}"
    return base if index == 0 else f"{base}_{index + 1}"


def _event(kind: str, **data: Any) -> ProtocolEvent:
    return ProtocolEvent(kind, data)


def _transient(name: str, data: Any) -> ProtocolEvent:
    # Transient data parts reach onData but never the message, so a reload equals the
    # live message without them.
    return ProtocolEvent(f"data-{name}", {"data": data, "transient": True})


class VercelAIAdapter(StreamAdapter):
    """One segment's UI message stream.

    On a continuation pass the client's assistant message id and its ``parts``: the
    stream then keeps that id, never starts a call's input twice, never re-dispatches
    an ``input-available`` call and never echoes an output the client already has.
    """

    def __init__(self, message_id: str | None = None, parts: Iterable[Any] = ()) -> None:
        super().__init__()
        self._message_id = message_id
        self._started = False
        self._step_started = False  # a start-step was sent in this segment
        self._after_results = False
        self._open: tuple[str, str, str] | None = None  # (kind, part id, stored message id)
        self._part_counts: dict[tuple[str, str], int] = {}
        self._input_started: set[str] = set()
        self._dispatched: set[str] = set()
        self._known: set[str] = set()
        self._awaiting_approval: set[str] = set()
        for part in parts:
            self._seed(part)

    def _seed(self, part: Any) -> None:
        if not isinstance(part, Mapping):
            return
        kind, call_id, state = part.get("type"), part.get("toolCallId"), part.get("state")
        if not isinstance(kind, str) or not isinstance(call_id, str):
            return
        if kind != "dynamic-tool" and not kind.startswith("tool-"):
            return
        self._input_started.add(call_id)
        if state == "input-available":
            self._dispatched.add(call_id)
        elif state in KNOWN_OUTPUT_STATES:
            self._known.add(call_id)
        elif state == "approval-requested":
            self._awaiting_approval.add(call_id)

    HEADERS: ClassVar[Mapping[str, str]] = HEADERS

    # native chunks -----------------------------------------------------------------

    def on_chunk(self, chunk: Any) -> list[ProtocolEvent]:
        if isinstance(chunk, TextChunk | ReasoningChunk):
            kind = "text" if isinstance(chunk, TextChunk) else "reasoning"
            return self._content(kind, chunk.message_id, chunk.content)
        if isinstance(chunk, ToolArgumentChunk):
            return self._argument(chunk)
        if isinstance(chunk, ToolCallChunk):
            # A preview only: the call may still wait for approval, or run on the backend.
            events = self._begin(chunk.message_id)
            return events + self._preview(chunk.tool.call_id, chunk.tool.name, chunk.tool.inputs)
        if isinstance(chunk, ToolResultChunk):
            return self._result(chunk)
        return []

    def _content(self, kind: str, message_id: str, content: str) -> list[ProtocolEvent]:
        events = self._begin(message_id)
        if not content:
            return events
        if self._open is not None and (self._open[0] != kind or self._open[2] != message_id):
            events += self._close()
        if self._open is None:
            index = self._part_counts.get((kind, message_id), 0)
            self._part_counts[(kind, message_id)] = index + 1
            self._open = (kind, part_id(kind, message_id, index), message_id)
            events.append(_event(f"{kind}-start", id=self._open[1]))
        events.append(_event(f"{kind}-delta", id=self._open[1], delta=content))
        return events

    def _argument(self, chunk: ToolArgumentChunk) -> list[ProtocolEvent]:
        call_id = chunk.tool_call_id
        events = self._begin(chunk.message_id) + self._close()
        if call_id not in self._input_started:
            self._input_started.add(call_id)
            events.append(_event("tool-input-start", toolCallId=call_id, toolName=chunk.tool_name))
        if chunk.delta:
            events.append(
                _event("tool-input-delta", toolCallId=call_id, inputTextDelta=chunk.delta)
            )
        return events

    def _result(self, chunk: ToolResultChunk) -> list[ProtocolEvent]:
        tool = chunk.tool
        self._after_results = True
        if tool.call_id in self._known:
            return []
        self._known.add(tool.call_id)
        events = self._preview(tool.call_id, tool.name, tool.inputs)
        if tool.approval == "rejected":
            events.append(_event("tool-output-denied", toolCallId=tool.call_id))
        elif tool.is_error:
            events.append(
                _event("tool-output-error", toolCallId=tool.call_id, errorText=tool.result or "")
            )
        else:
            events.append(
                _event("tool-output-available", toolCallId=tool.call_id, output=tool.result or "")
            )
        return events

    # portable events ---------------------------------------------------------------

    def on_portable(self, event: StreamEvent) -> list[ProtocolEvent] | None:
        if isinstance(event, StepStarted | StepFinished):
            status = "started" if isinstance(event, StepStarted) else "finished"
            step: dict[str, Any] = {"name": event.name, "status": status}
            if event.metadata:
                step["metadata"] = dict(event.metadata)
            return [_transient("workflow-step", step)]
        if isinstance(event, Activity):
            data = {"id": event.id, "type": event.activity_type, "data": dict(event.data)}
            return [_transient("workflow-activity", data)]
        if isinstance(event, Custom):
            return [_transient(event.name, event.value)]
        return None

    # terminals -----------------------------------------------------------------------

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        events = self._close()
        if isinstance(request, ToolResultsRequest):
            for call in request.tool_calls:
                if call.id in self._dispatched or call.id in self._known:
                    continue
                self._dispatched.add(call.id)
                events += self._preview(call.id, call.name, call.inputs)
                events.append(
                    _event(
                        "tool-input-available",
                        toolCallId=call.id,
                        toolName=call.name,
                        input=call.inputs,
                    )
                )
        elif isinstance(request, ApprovalRequest):
            for action in request.actions:
                events += self._preview(action.id, action.name, action.inputs)
                events.append(
                    _event(
                        "tool-approval-request",
                        toolCallId=action.id,
                        approvalId=action.id,
                        reason=request.message,
                    )
                )
            events += self._responses(request.decided)
        else:  # any other wait: the client learns of it, nothing is dispatched
            events.append(_transient("workflow-interrupt", request.to_json()))
        return events + self.on_end()

    def _responses(self, decided: Mapping[str, Any]) -> list[ProtocolEvent]:
        """Decisions taken elsewhere (another tab, the native API) for parts the client
        still shows as awaiting approval; parts it has not got are left alone."""
        events: list[ProtocolEvent] = []
        for call_id, decision in decided.items():
            if call_id not in self._awaiting_approval:
                continue
            response: dict[str, Any] = {"approvalId": call_id, "approved": decision == "approve"}
            if isinstance(decision, list) and len(decision) > 1 and decision[1]:
                response["reason"] = decision[1]
            events.append(ProtocolEvent("tool-approval-response", response))
        return events

    def on_end(self) -> list[ProtocolEvent]:
        events = self._close()
        if self._step_started:
            events.append(_event("finish-step"))
        return [*events, _event("finish")]

    def on_stopped(self) -> list[ProtocolEvent]:
        # The AI SDK's own ending of an aborted stream: open parts closed, then ``abort``.
        events = self._start(None) + self._close()
        if self._step_started:
            events.append(_event("finish-step"))
        return [*events, _event("abort", reason="user")]

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        return [*self._close(), _event("error", errorText=self.wire_error(exc)[0])]

    # framing helpers -------------------------------------------------------------------

    def _start(self, message_id: str | None) -> list[ProtocolEvent]:
        if self._started:
            return []
        self._started = True
        self._message_id = self._message_id or message_id or new_id("msg")
        return [_event("start", messageId=self._message_id)]

    def _begin(self, message_id: str) -> list[ProtocolEvent]:
        """Start the message; an inference after tool results opens a new UI step."""
        events = self._start(message_id)
        if self._after_results:
            self._after_results = False
            events += self._close()
            if self._step_started:
                events.append(_event("finish-step"))
            events.append(_event("start-step"))
            self._step_started = True
        return events

    def _close(self) -> list[ProtocolEvent]:
        if self._open is None:
            return []
        kind, wire_id, _ = self._open
        self._open = None
        return [_event(f"{kind}-end", id=wire_id)]

    def _preview(self, call_id: str, name: str, inputs: dict[str, Any]) -> list[ProtocolEvent]:
        """Make the call's part exist on the client, without dispatching it."""
        events = self._start(None) + self._close()
        if call_id not in self._input_started:
            self._input_started.add(call_id)
            events.append(_event("tool-input-start", toolCallId=call_id, toolName=name))
            events.append(
                _event("tool-input-delta", toolCallId=call_id, inputTextDelta=dumps(inputs))
            )
        return events
