"""The native vocabulary (docs/reference/neuron-streaming-spec.md section 5.2): stateless,
one event per chunk, and every segment of a run ends with one ``done`` event naming how
(a close without it is a dropped connection, not the end of the run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

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
    RunUsage,
    StepFinished,
    StepStarted,
    StreamEvent,
)
from relayline.shared.interrupts import InterruptRequest
from relayline.shared.protocols.adapter import StreamAdapter

#: how a segment ended: completed (the run finished), interrupted (it waits for tool
#: results or approvals), failed, cancelled (a person stopped it)
DoneStatus = Literal["completed", "interrupted", "failed", "cancelled"]

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

    def _done_frame(self, status: DoneStatus) -> list[ProtocolEvent]:
        # Only a segment bound to its run says it ended: frames made outside the run
        # (failure_frames: the stream broke, the run moved elsewhere) leave the client
        # to resume, since the run may go on.
        if self.segment_run_id is None:
            return []
        return [ProtocolEvent("done", {"status": status, "runId": self.segment_run_id})]

    def on_end(self) -> list[ProtocolEvent]:
        # When the run reported usage, one "finish" frame carries its tokens first.
        usage = [] if self.usage is None else [ProtocolEvent("finish", {"usage": self.usage})]
        return usage + self._done_frame("completed")

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        data = self._with_usage({"request": request.to_json()})
        return [ProtocolEvent("interrupt", data), *self._done_frame("interrupted")]

    def on_stopped(self) -> list[ProtocolEvent]:
        return [ProtocolEvent("cancelled", {"reason": "user"}), *self._done_frame("cancelled")]

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        message, code = self.wire_error(exc)
        data = {"message": message, "code": code}
        return [ProtocolEvent("error", self._with_usage(data)), *self._done_frame("failed")]
