"""Resuming a thread's active segment from its log (channels.stream.log): the replay
after a cursor, then live to the end, in the segment's own protocol, read through the
app's LogMultiplexer as a relay is (``relayline.web.dispatch.log_frames``).

A native cursor names its segment (web.cursor). When the thread has moved on to a newer
segment since, the client gets the rest of the segment it was reading (what is kept
after its cursor, never waited for), then: after that segment's end, the newer segment
from its first frame; after a segment that was replaced (its run was recovered in the
newer one), the protocol's "continues elsewhere" error frame whose ``id:`` points at the
newer segment's start, where the client resumes. Never the newer segment from the old
cursor's position."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Response, current_app, request
from werkzeug.exceptions import Gone

from relayline.channels import active_segment
from relayline.channels.stream.log import (
    ActiveSegment,
    LogGoneError,
    LogReader,
    is_thread_segment,
    kept_after,
    latest_segment,
)
from relayline.channels.stream.splice import splice
from relayline.shared.errors import RunElsewhereError
from relayline.shared.jobs import ProtocolName
from relayline.shared.protocols import failure_frames, protocol
from relayline.shared.sse import HEARTBEAT as SSE_HEARTBEAT
from relayline.shared.sse import encode_event
from relayline.shared.texts import run_recovered
from relayline.web.cursor import Cursor, frame_id
from relayline.web.direct import direct_socket, frames_of
from relayline.web.dispatch import HEARTBEAT_SECONDS, SSE_HEADERS, STREAM_ID_HEADER, log_frames
from relayline.web.services import services
from relayline.web.slow_clients import client_budget

#: envelopes of a left segment sent in one response (the client resumes for more)
LEFT_SEGMENT_MOST = 1000


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
    app's LogMultiplexer; ``ids`` puts ``id: <segment>:<sequence>`` before each frame
    (the native cursor, which EventSource resends by itself)."""
    frames = _live(reader.segment_id, thread_id, protocol_name, after=reader.after, ids=ids)
    headers = {**protocol(protocol_name).headers, **SSE_HEADERS}
    return Response(_opened(frames), headers={**headers, STREAM_ID_HEADER: reader.segment_id})


def _live(
    segment_id: str, thread_id: str, protocol_name: ProtocolName, *, after: int, ids: bool
) -> Iterator[str]:
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    svc = services()
    return log_frames(
        svc.logs,
        segment_id,
        protocol_name,
        thread_id,
        {},
        after=after,
        heartbeat=heartbeat,
        timeout=svc.settings.relay_timeout,
        ids=ids,
        direct=direct_socket(request.environ, svc.settings),
        budget=client_budget(request.environ, svc.settings),
    )


def resume_native(thread_id: str, cursor: Cursor) -> Response:
    """``GET /api/threads/<id>/stream``: the thread's newest segment after ``cursor``,
    or, for a cursor in a segment the thread has left, what the module docstring says.
    204 when there is nothing more to send; Gone (410) when the cursor cannot be
    continued from."""
    svc = services()
    if cursor.segment_id is not None:
        newest = active_segment(svc.redis, thread_id) or latest_segment(svc.redis, thread_id)
        if newest is not None and newest.segment_id != cursor.segment_id:
            return _left_segment(thread_id, cursor.segment_id, cursor.sequence, newest)
    try:
        reader = active_reader(thread_id, "native", cursor.sequence, ended_too=True)
    except LogGoneError as exc:
        raise Gone(exc.message) from exc
    if reader is None:
        return Response(status=204)
    return resumed_response(reader, thread_id, "native", ids=True)


def _left_segment(thread_id: str, left: str, after: int, newest: ActiveSegment) -> Response:
    svc = services()
    if not is_thread_segment(svc.redis, thread_id, left):
        raise Gone(f"Stream {left} of thread '{thread_id}' is no longer kept; reload the thread.")
    try:
        kept = kept_after(svc.redis, left, after, LEFT_SEGMENT_MOST)
    except LogGoneError as exc:
        raise Gone(exc.message) from exc
    rest = frames_of([splice(text) for text in kept.envelopes], left)
    tail: Iterator[str] = iter(())
    if kept.ended:
        if newest.protocol == "native":  # the next segment, from its first frame
            tail = _live(newest.segment_id, thread_id, "native", after=-1, ids=True)
    elif len(kept.envelopes) < LEFT_SEGMENT_MOST:  # all that will ever be: it was replaced
        moved = RunElsewhereError(run_recovered(thread_id))
        events = failure_frames("native", thread_id, {}, moved, started=True)
        cursor = frame_id(newest.segment_id, -1)
        tail = iter([f"id: {cursor}\n{encode_event(event)}" for event in events])
    if not rest and kept.ended and newest.protocol != "native":
        return Response(status=204)  # read to its end; what follows is not for this client
    headers = {**protocol("native").headers, **SSE_HEADERS, STREAM_ID_HEADER: left}
    return Response(_opened(_chain(rest, tail)), headers=headers)


def _chain(first: list[str], then: Iterator[str]) -> Iterator[str]:
    if first:
        yield "".join(first)
    yield from then


def _opened(frames: Iterator[str]) -> Iterator[str]:
    # A comment first: the headers go out now, not with the first event, which may be
    # a long way off (the cursor was at the live edge).
    yield SSE_HEARTBEAT
    yield from frames
