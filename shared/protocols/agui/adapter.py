"""AG-UI events from native chunks (docs/reference/neuron-streaming-spec.md section 5.3).

The wire is plain camelCase dicts shaped exactly like the ``ag_ui.core`` event models
(the tests parse every event with them and run ``ag-ui-validate``); building pydantic
objects per delta would only cost time on the hot path.

Tool calls are never published from a proposal. AG-UI clients may execute any call
that has no result when a run finishes, so a call awaiting approval must not exist on
the wire: argument deltas are buffered, and a call is published (START/ARGS/END) only
right before its local result, or when ``interrupt(ToolResultsRequest)`` hands it to
the frontend.

Every published id is a stored message id or derived from one (``reasoning_<id>``,
``result_<callId>``), so a reload (:mod:`relayline.shared.protocols.agui.hydrate`) rebuilds the
same ids. relayline keeps the text, reasoning and calls of one model response in one
assistant message, so a call's ``parentMessageId`` is that response's text message id.
It comes from the segment's proposal chunks or, in a resumed segment that saw no
proposal, from ``ToolResultChunk.message_id`` / ``PendingCall.parent_message_id``;
without one it is omitted (the client then files the call under the call's own id).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

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
from relayline.shared.interrupts import InterruptRequest, ToolResultsRequest
from relayline.shared.jsonutil import dumps
from relayline.shared.messages import Message
from relayline.shared.persistence.store import RunRecord
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.agui.hydrate import hydrate
from relayline.shared.protocols.agui.wire import (
    Hydrated,
    MessageJSON,
    interrupts_json,
    reasoning_id,
    tool_call_json,
    tool_message_json,
)


class AGUIAdapter(StreamAdapter):
    """One segment of AG-UI output, seeded with what the client already holds.

    ``messages`` are the client's AG-UI message dicts: they seed MESSAGES_SNAPSHOT, and
    the calls and results they hold are never published again. ``run_id`` is the
    client's per-request id (one is generated when None); ``state`` seeds STATE_SNAPSHOT.
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str | None = None,
        messages: Sequence[Mapping[str, Any]] = (),
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.run_id = run_id
        self._state = copy.deepcopy(dict(state or {}))
        # What the client sent, shaped like AG-UI messages (the translator validated them).
        self._messages: list[MessageJSON] = [
            cast(MessageJSON, copy.deepcopy(dict(m))) for m in messages
        ]
        self._held: set[str] = set()  # calls the client sent us
        self._answered: set[str] = set()  # calls whose result the client holds
        for message in self._messages:
            for call in message.get("toolCalls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    self._held.add(call["id"])
            if message.get("role") == "tool" and isinstance(message.get("toolCallId"), str):
                self._answered.add(message["toolCallId"])
        self._started = set(self._held)  # calls the client holds (sent or published)
        self._restated = False  # whether this segment sent a MESSAGES_SNAPSHOT
        self._text: str | None = None  # open text message id
        self._reasoning: str | None = None  # open reasoning message id (derived)
        self._args: dict[str, list[str]] = {}  # buffered argument deltas by call id
        self._parents: dict[str, str] = {}  # call id -> assistant message id

    # No "Connection": a WSGI app must not set hop-by-hop headers (PEP 3333). The
    # server owns the connection: werkzeug's closes it after every response, and a
    # client told "keep-alive" sent its next request into that closing socket and hung.
    HEADERS: ClassVar[Mapping[str, str]] = {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    }

    @staticmethod
    def hydrate(stored_messages: Sequence[Message], run: RunRecord | None) -> Hydrated:
        """``{messages, interrupts}`` a reloading client needs
        (docs/reference/neuron-streaming-spec.md section 7.3)."""
        return hydrate(stored_messages, run)

    # framing ---------------------------------------------------------------------

    def on_start(self) -> list[ProtocolEvent]:
        if self.run_id is None:
            self.run_id = new_id("run")
        return [ProtocolEvent("RUN_STARTED", {"runId": self.run_id, "threadId": self.thread_id})]

    def on_end(self) -> list[ProtocolEvent]:
        return self._close_open() + self._finished()

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        message, code = self.wire_error(exc)
        return [*self._close_open(), ProtocolEvent("RUN_ERROR", {"message": message, "code": code})]

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        events = self._close_open()
        if isinstance(request, ToolResultsRequest):
            # An ordinary frontend handoff: the client runs the calls it holds without
            # a result and answers with role "tool" messages on its next request.
            for call in request.tool_calls:
                # A resumed segment saw no proposal: the request names the parent. When
                # the client already holds that message (the call waited for an
                # approval), the call goes out without it and the client files it under
                # the call's own id: CopilotKit executes only the calls of messages
                # that are new to a run.
                parent = call.parent_message_id
                if parent is not None and self._find(parent) is None:
                    self._parents.setdefault(call.id, parent)
                events += self._publish_call(call.id, call.name, call.inputs)
            return events + self._finished()
        outcome = {"type": "interrupt", "interrupts": interrupts_json(request)}
        return [
            *events,
            ProtocolEvent("STATE_SNAPSHOT", {"snapshot": copy.deepcopy(self._state)}),
            self._messages_snapshot(),
            *self._finished(outcome),
        ]

    def _messages_snapshot(self) -> ProtocolEvent:
        return ProtocolEvent("MESSAGES_SNAPSHOT", {"messages": copy.deepcopy(self._messages)})

    def _finished(self, outcome: dict[str, Any] | None = None) -> list[ProtocolEvent]:
        if self.run_id is None:  # never started: there is no run to finish
            return []
        data: dict[str, Any] = {"threadId": self.thread_id, "runId": self.run_id}
        if outcome is not None:
            data["outcome"] = outcome
        return [ProtocolEvent("RUN_FINISHED", data)]

    # chunks ----------------------------------------------------------------------

    def on_chunk(self, chunk: Any) -> list[ProtocolEvent]:
        if isinstance(chunk, TextChunk):
            return self._on_text(chunk)
        if isinstance(chunk, ReasoningChunk):
            return self._on_reasoning(chunk)
        if isinstance(chunk, ToolArgumentChunk):
            self._args.setdefault(chunk.tool_call_id, []).append(chunk.delta)
            self._parents.setdefault(chunk.tool_call_id, chunk.message_id)
            return []
        if isinstance(chunk, ToolCallChunk):
            # A proposal only tells us the parent; publishing waits (module docstring).
            self._parents[chunk.tool.call_id] = chunk.message_id
            return []
        if isinstance(chunk, ToolResultChunk):
            return self._on_result(chunk)
        return []

    def _on_text(self, chunk: TextChunk) -> list[ProtocolEvent]:
        if not chunk.content:
            return []
        events = self._close_reasoning()
        if self._text is not None and self._text != chunk.message_id:
            events += self._close_text()
        if self._text is None:
            self._text = chunk.message_id
            self._assistant(chunk.message_id)
            start = {"messageId": chunk.message_id, "role": "assistant"}
            events.append(ProtocolEvent("TEXT_MESSAGE_START", start))
        message = self._assistant(chunk.message_id)
        message["content"] = (message.get("content") or "") + chunk.content
        delta = {"messageId": chunk.message_id, "delta": chunk.content}
        return [*events, ProtocolEvent("TEXT_MESSAGE_CONTENT", delta)]

    def _on_reasoning(self, chunk: ReasoningChunk) -> list[ProtocolEvent]:
        if not chunk.content:
            return []
        rid = reasoning_id(chunk.message_id)
        events = self._close_text()
        if self._reasoning is not None and self._reasoning != rid:
            events += self._close_reasoning()
        if self._reasoning is None:
            self._reasoning = rid
            self._reasoning_message(chunk.message_id)
            events.append(ProtocolEvent("REASONING_START", {"messageId": rid}))
            start = {"messageId": rid, "role": "reasoning"}
            events.append(ProtocolEvent("REASONING_MESSAGE_START", start))
        held = self._reasoning_message(chunk.message_id)
        held["content"] = (held.get("content") or "") + chunk.content
        delta = {"messageId": rid, "delta": chunk.content}
        return [*events, ProtocolEvent("REASONING_MESSAGE_CONTENT", delta)]

    def _on_result(self, chunk: ToolResultChunk) -> list[ProtocolEvent]:
        tool = chunk.tool
        if tool.call_id in self._answered:  # the client sent it: never echo it back
            return []
        if chunk.message_id is not None:
            self._parents.setdefault(tool.call_id, chunk.message_id)
        events = self._close_open()
        if tool.call_id in self._held and not self._restated:
            # The client holds the call but not its answer (a resume answered it, e.g.
            # after a reload). Restating the history first lets consumers that trust
            # only what this run announced (ag-ui-validate AGUI207) know the call.
            self._restated = True
            events.append(self._messages_snapshot())
        events += self._publish_call(tool.call_id, tool.name, tool.inputs)
        self._answered.add(tool.call_id)
        # A rejection is a plain instruction for the model, never an error.
        message = tool_message_json(tool.call_id, tool.result or "", tool.is_error)
        self._messages.append(message)
        data = {"messageId": message["id"], **{k: v for k, v in message.items() if k != "id"}}
        return [*events, ProtocolEvent("TOOL_CALL_RESULT", data)]

    def _publish_call(
        self, call_id: str, name: str, inputs: Mapping[str, Any]
    ) -> list[ProtocolEvent]:
        if call_id in self._started:
            return []
        self._started.add(call_id)
        parent = self._parents.get(call_id)
        start: dict[str, Any] = {"toolCallId": call_id, "toolCallName": name}
        if parent is not None:
            start["parentMessageId"] = parent
        deltas = [d for d in self._args.pop(call_id, ()) if d] or [dumps(dict(inputs))]
        # Mirror the client: without a parent it files the call under its own id.
        holder = self._assistant(parent or call_id)
        holder.setdefault("toolCalls", []).append(tool_call_json(call_id, name, "".join(deltas)))
        return [
            ProtocolEvent("TOOL_CALL_START", start),
            *(ProtocolEvent("TOOL_CALL_ARGS", {"toolCallId": call_id, "delta": d}) for d in deltas),
            ProtocolEvent("TOOL_CALL_END", {"toolCallId": call_id}),
        ]

    # portable events ---------------------------------------------------------------

    def on_portable(self, event: StreamEvent) -> list[ProtocolEvent] | None:
        if isinstance(event, StepStarted | StepFinished):
            data: dict[str, Any] = {"stepName": event.name}
            if event.metadata:
                data["metadata"] = dict(event.metadata)
            if isinstance(event, StepStarted):
                return [ProtocolEvent("STEP_STARTED", data)]
            # A model step's messages end with it, so START/END pairs nest in the step.
            return [*self._close_open(), ProtocolEvent("STEP_FINISHED", data)]
        if isinstance(event, Activity):
            # Not mirrored into MESSAGES_SNAPSHOT: activities are not stored, so a
            # reload could not rebuild them, and clients keep their own activities.
            data = {
                "messageId": event.id,
                "activityType": event.activity_type,
                "content": dict(event.data),
                "replace": True,
            }
            return [ProtocolEvent("ACTIVITY_SNAPSHOT", data)]
        if isinstance(event, Custom):
            return [ProtocolEvent("CUSTOM", {"name": event.name, "value": event.value})]
        return None

    # open messages and the projection ---------------------------------------------------

    def _close_text(self) -> list[ProtocolEvent]:
        if self._text is None:
            return []
        message_id, self._text = self._text, None
        return [ProtocolEvent("TEXT_MESSAGE_END", {"messageId": message_id})]

    def _close_reasoning(self) -> list[ProtocolEvent]:
        if self._reasoning is None:
            return []
        rid, self._reasoning = self._reasoning, None
        return [
            ProtocolEvent("REASONING_MESSAGE_END", {"messageId": rid}),
            ProtocolEvent("REASONING_END", {"messageId": rid}),
        ]

    def _close_open(self) -> list[ProtocolEvent]:
        return self._close_reasoning() + self._close_text()

    def _find(self, message_id: str) -> MessageJSON | None:
        return next((m for m in self._messages if m.get("id") == message_id), None)

    def _assistant(self, message_id: str) -> MessageJSON:
        found = self._find(message_id)
        if found is None:
            found = MessageJSON(id=message_id, role="assistant", content="")
            self._messages.append(found)
        return found

    def _reasoning_message(self, message_id: str) -> MessageJSON:
        rid = reasoning_id(message_id)
        found = self._find(rid)
        if found is None:
            found = {"id": rid, "role": "reasoning", "content": ""}
            # Reasoning precedes its response's text, as a reload orders them.
            owner = self._find(message_id)
            at = self._messages.index(owner) if owner is not None else len(self._messages)
            self._messages.insert(at, found)
        return found
