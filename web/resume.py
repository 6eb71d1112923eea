"""Resuming a thread's active segment from its log (channels.log): the replay after a
cursor, then live to the end, in the segment's own protocol, read through the app's
LogMultiplexer as a relay is (``relayline.web.dispatch.log_frames``)."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Response, current_app, request

from relayline.channels import active_segment
from relayline.channels.stream.log import LogGoneError, LogReader, latest_segment
from relayline.shared.jobs import ProtocolName
from relayline.shared.protocols import protocol
from relayline.shared.sse import HEARTBEAT as SSE_HEARTBEAT
from relayline.web.direct import direct_socket
from relayline.web.dispatch import HEARTBEAT_SECONDS, SSE_HEADERS, STREAM_ID_HEADER, log_frames
from relayline.web.services import services


def active_reader(
    thread_id: str, protocol_name: ProtocolName, after: int, *, ended_too: bool = False
) -> LogReader | None:
    """A reader of the thread's running segment after ``after`` (with ``ended_too``,
    else of its newest one while kept), or None when there is nothing to send: no such
    segment in ``protocol_name``, or it ended and the cursor holds its last event.
    Raises LogGoneError for a cursor the log cannot continue from (trimmed, or the
    segment it belonged to is no longer kept)."""
    svc = services()
    segment = active_segment(svc.redis, thread_id)
    if segment is None and ended_too:
        segment = latest_segment(svc.redis, thread_id)
        if segment is None and after >= 0:
            raise LogGoneError(f"Nothing of thread {thread_id!r} is kept after {after}.")
    if segment is None or segment.protocol != protocol_name:
        return None  # nothing running that this client could read
    reader = LogReader(svc.redis, segment.segment_id, after=after, thread_id=thread_id)
    reader.check()
    if reader.finished_at_cursor():
        return None
    return reader


def resumed_response(
    reader: LogReader, thread_id: str, protocol_name: ProtocolName, *, ids: bool
) -> Response:
    """The SSE response replaying ``reader``'s segment after its cursor, read through the
    app's LogMultiplexer; ``ids`` puts ``id: <sequence>`` before each frame (the native
    cursor, which EventSource resends by itself)."""
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    svc = services()
    frames = log_frames(
        svc.logs,
        reader.segment_id,
        protocol_name,
        thread_id,
        {},
        after=reader.after,
        heartbeat=heartbeat,
        timeout=svc.settings.relay_timeout,
        ids=ids,
        direct=direct_socket(request.environ, svc.settings),
    )
    headers = {**protocol(protocol_name).headers, **SSE_HEADERS}
    return Response(_opened(frames), headers={**headers, STREAM_ID_HEADER: reader.segment_id})


def _opened(frames: Iterator[str]) -> Iterator[str]:
    # A comment first: the headers go out now, not with the first event, which may be
    # a long way off (the cursor was at the live edge).
    yield SSE_HEARTBEAT
    yield from frames
