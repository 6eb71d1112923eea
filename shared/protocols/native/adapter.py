"""The native vocabulary (docs/reference/neuron-streaming-spec.md section 5.2): stateless,
one event per chunk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from shared.events import Activity, Custom, ProtocolEvent, StepFinished, StepStarted, StreamEvent
from shared.interrupts import InterruptRequest
from shared.protocols.adapter import StreamAdapter

_CHUNK_TYPES: dict[type, str] = {
    TextChunk: "text",
    ReasoningChunk: "reasoning",
    ToolArgumentChunk: "tool-argument",
    ToolCallChunk: "tool-call",
    ToolResultChunk: "tool-result",
}


class NativeAdapter(StreamAdapter):
    HEADERS: ClassVar[Mapping[str, str]] = {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
    }

    def on_chunk(self, chunk: Any) -> list[ProtocolEvent]:
        kind = next(_CHUNK_TYPES[c] for c in type(chunk).__mro__ if c in _CHUNK_TYPES)
        return [ProtocolEvent(kind, chunk.to_json())]

    def on_portable(self, event: StreamEvent) -> list[ProtocolEvent] | None:
        if isinstance(event, StepStarted | StepFinished):
            kind = "step-started" if isinstance(event, StepStarted) else "step-finished"
            return [ProtocolEvent(kind, {"name": event.name, "metadata": dict(event.metadata)})]
        if isinstance(event, Activity):
            data = {"id": event.id, "activityType": event.activity_type, "data": dict(event.data)}
            return [ProtocolEvent("activity", data)]
        if isinstance(event, Custom):
            return [ProtocolEvent("custom", {"name": event.name, "value": event.value})]
        return None

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        return [ProtocolEvent("interrupt", {"request": request.to_json()})]

    def on_stopped(self) -> list[ProtocolEvent]:
        return [ProtocolEvent("cancelled", {"reason": "user"})]

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        message, code = self.wire_error(exc)
        data = {"message": message} if code is None else {"message": message, "code": code}
        return [ProtocolEvent("error", data)]
