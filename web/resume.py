"""Resuming a thread's active segment from its log (channels.log): the replay after a
cursor, then live to the end, in the segment's own protocol."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Response, current_app
from redis.exceptions import RedisError

from channels import ChannelReadError, active_segment
from channels.log import LogGoneError, LogReader, latest_segment
from shared.jobs import ProtocolName
from shared.protocols import failure_frames, protocol
from shared.sse import HEARTBEAT as SSE_HEARTBEAT
from shared.sse import encode_event
from web.dispatch import HEARTBEAT_SECONDS, SSE_HEADERS, STREAM_ID_HEADER, delivery_error
from web.services import services


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
    reader = LogReader(svc.redis, segment.stream_id, after=after, thread_id=thread_id)
    reader.check()
    if reader.finished_at_cursor():
        return None
    return reader


def resumed_response(
    reader: LogReader, thread_id: str, protocol_name: ProtocolName, *, ids: bool
) -> Response:
    """The SSE response replaying ``reader``'s segment; ``ids`` puts ``id: <sequence>``
    before each frame (the native cursor, which EventSource resends by itself)."""
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    timeout = services().settings.relay_timeout
    body = _frames(reader, thread_id, protocol_name, heartbeat, timeout, ids)
    headers = {**protocol(protocol_name).headers, **SSE_HEADERS}
    return Response(body, headers={**headers, STREAM_ID_HEADER: reader.stream_id})


def _frames(
    reader: LogReader,
    thread_id: str,
    protocol_name: ProtocolName,
    heartbeat: float,
    timeout: float,
    ids: bool,
) -> Iterator[str]:
    # A comment first: the headers go out now, not with the first event, which may be
    # a long way off (the cursor was at the live edge).
    yield SSE_HEARTBEAT
    yield from live_frames(reader, thread_id, protocol_name, heartbeat, timeout, ids=ids)


def live_frames(
    reader: LogReader,
    thread_id: str,
    protocol_name: ProtocolName,
    heartbeat: float,
    timeout: float,
    *,
    ids: bool = False,
    started: bool = False,
) -> Iterator[str]:
    """``reader``'s segment as SSE frames to its terminal; a broken transport ends with
    the protocol's error frames (``started``: the client already saw the segment begin)."""
    try:
        for envelope in reader.envelopes(wait=heartbeat, timeout=timeout):
            if envelope is None:
                yield SSE_HEARTBEAT
                continue
            if envelope.is_terminal:
                return
            started = True
            frame = encode_event(envelope.to_event())
            yield f"id: {envelope.sequence}\n{frame}" if ids else frame
    except (ChannelReadError, RedisError) as exc:
        ended = delivery_error(exc, thread_id)
        for event in failure_frames(protocol_name, thread_id, {}, ended, started=started):
            yield encode_event(event)
