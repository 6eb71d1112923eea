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
from shared.events import (
    Activity,
    Custom,
    ProtocolEvent,
    RunUsage,
    StepFinished,
    StepStarted,
    StreamEvent,
)
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

    def __init__(self) -> None:
        super().__init__()
        #: the run's tokens as of the segment's last model call that reported usage
        self.usage: dict[str, Any] | None = None

    def transform(self, item: Any) -> list[ProtocolEvent]:
        if isinstance(item, RunUsage):
            self.usage = dict(item.usage)  # carried by the terminal frame, not sent now
            return []
        return super().transform(item)

    def _with_usage(self, data: dict[str, Any]) -> dict[str, Any]:
        return data if self.usage is None else {**data, "usage": self.usage}

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

    def on_end(self) -> list[ProtocolEvent]:
        # A completed segment emits nothing, unless the run reported usage: then one
        # "finish" frame carries the run's tokens.
        return [] if self.usage is None else [ProtocolEvent("finish", {"usage": self.usage})]

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        return [ProtocolEvent("interrupt", self._with_usage({"request": request.to_json()}))]

    def on_stopped(self) -> list[ProtocolEvent]:
        return [ProtocolEvent("cancelled", {"reason": "user"})]

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        message, code = self.wire_error(exc)
        data = {"message": message} if code is None else {"message": message, "code": code}
        return [ProtocolEvent("error", self._with_usage(data))]
