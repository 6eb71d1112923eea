"""The stream adapter contract (docs/reference/neuron-streaming-spec.md section 5.1).

An adapter turns what the loop yields into ProtocolEvents, and frames a segment:
``start()``, then exactly one terminal: ``end()``, ``interrupt(request)``,
``stopped()`` (a person stopped the run) or ``error(exc)``. One instance serves one
segment; after a terminal it emits nothing. The segment names its run with
``bind_run(run_id)`` once admitted; an adapter never bound (``failure_frames``: a
failure outside the run) must not claim the run ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from relayline.shared.errors import DeliveryError, StreamAdapterError
from relayline.shared.events import ProtocolEvent, StreamEvent
from relayline.shared.failures import failure_of
from relayline.shared.interrupts import InterruptRequest
from relayline.shared.texts import RUN_FAILED

Mapper = Callable[[Any], StreamEvent | None]

CHUNK_TYPES = (TextChunk, ReasoningChunk, ToolArgumentChunk, ToolCallChunk, ToolResultChunk)


class StreamAdapter:
    """Base adapter. Subclasses override the ``on_*`` hooks they emit for."""

    #: the text of a failure whose reason the owner cannot act on (code ``internal``);
    #: never the exception's own message, which may hold anything
    error_message = RUN_FAILED

    def wire_error(self, exc: BaseException) -> tuple[str, str]:
        """The message and code the client sees for ``exc``: a DeliveryError's own (the
        run goes on and the client can act), else why the run failed
        (``relayline.shared.failures``: the owner's message and the failure code)."""
        if isinstance(exc, DeliveryError):
            return exc.message, exc.code
        failure = failure_of(exc)
        if failure.code == "internal":
            return self.error_message, failure.code
        return failure.message, failure.code

    def __init__(self) -> None:
        self._mappers: dict[type, Mapper] = {}
        self._done = False
        #: relayline's run this segment belongs to (not AG-UI's client run id); None
        #: until the segment binds it
        self.segment_run_id: str | None = None

    def bind_run(self, run_id: str) -> None:
        """Name the segment's run (known only once it is admitted)."""
        self.segment_run_id = run_id

    #: the response headers of a stream in this protocol
    HEADERS: ClassVar[Mapping[str, str]] = {}

    def headers(self) -> dict[str, str]:
        return dict(self.HEADERS)

    def map_event(self, cls: type, mapper: Mapper) -> None:
        """Map objects of exactly ``cls`` (no subclasses) to a portable event, or None to drop."""
        self._mappers[cls] = mapper

    # framing -------------------------------------------------------------------

    def start(self) -> list[ProtocolEvent]:
        return [] if self._done else self.on_start()

    def transform(self, item: Any) -> list[ProtocolEvent]:
        if self._done:
            return []
        if isinstance(item, StreamEvent):
            return self._portable(item)
        mapper = self._mappers.get(type(item))
        if mapper is not None:
            mapped = mapper(item)
            if mapped is None:
                return []
            if not isinstance(mapped, StreamEvent):
                raise StreamAdapterError(
                    f"The stream event mapper for {type(item).__name__} must return "
                    "StreamEvent or None."
                )
            return self._portable(mapped)
        if isinstance(item, CHUNK_TYPES):
            return self.on_chunk(item)
        return []

    def end(self) -> list[ProtocolEvent]:
        if self._done:
            return []
        self._done = True
        return self.on_end()

    def interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        if self._done:
            return []
        self._done = True
        return self.on_interrupt(request)

    def stopped(self) -> list[ProtocolEvent]:
        if self._done:
            return []
        self._done = True
        return self.on_stopped()

    def error(self, exc: BaseException) -> list[ProtocolEvent]:
        if self._done:
            return []
        self._done = True
        return self.on_error(exc)

    # hooks -----------------------------------------------------------------------

    def _portable(self, event: StreamEvent) -> list[ProtocolEvent]:
        encoded = self.on_portable(event)
        if encoded is None:
            raise StreamAdapterError(
                f"{type(self).__name__} cannot encode stream event {type(event).__name__}."
            )
        return encoded

    def on_start(self) -> list[ProtocolEvent]:
        return []

    def on_chunk(self, chunk: Any) -> list[ProtocolEvent]:
        return []

    def on_portable(self, event: StreamEvent) -> list[ProtocolEvent] | None:
        return None

    def on_end(self) -> list[ProtocolEvent]:
        return []

    def on_interrupt(self, request: InterruptRequest) -> list[ProtocolEvent]:
        return []

    def on_stopped(self) -> list[ProtocolEvent]:
        """A stopped run closes what is open and ends as the protocol says stopped; by
        default as a completed one."""
        return self.on_end()

    def on_error(self, exc: BaseException) -> list[ProtocolEvent]:
        return []
