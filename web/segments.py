"""A segment's raw envelopes after a cursor, whatever its protocol: what a push
consumer (web/static/relayline-consumer.js, channels.consumer) fetches to fill a gap
in what Pusher or Mercure delivered, or to catch up after subscribing late.

``GET /api/threads/<id>/segments/<streamId>/envelopes?after=<sequence>`` answers
``{"envelopes": [...], "ended": bool}`` with what the log keeps now (at most
``MAX_ENVELOPES``; ask again after the last one for more). The thread's owner only
(404 for anyone else, and for a segment that is not the thread's); 410 when the log
cannot continue from the cursor; 400 for a malformed stream id or cursor."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import BadRequest, Gone, NotFound

from relayline.channels.stream.log import (
    LogGoneError,
    active_segment,
    is_thread_segment,
    kept_after,
)
from relayline.shared.ids import SEGMENT_ID
from relayline.web.auth import current_user, thread_for
from relayline.web.services import services

bp = Blueprint("segments", __name__)

#: envelopes per answer: bounds one response; a consumer asks again after the last one
MAX_ENVELOPES = 1000


class EnvelopesAnswer(TypedDict):
    envelopes: list[Any]
    #: the envelopes reach the segment's terminal: nothing will follow them
    ended: bool


@bp.get("/api/threads/<thread_id>/segments/<segment_id>/envelopes")
def envelopes(thread_id: str, segment_id: str) -> Response:
    user = current_user()
    if not SEGMENT_ID.fullmatch(segment_id):
        raise BadRequest("The stream id must be 32 lowercase hexadecimal characters.")
    after = _after()
    thread_for(thread_id, user, must_exist=True)
    redis = services().redis
    # The thread's segments only: a stream id of another thread is as unknown as a
    # missing one, whoever owns it.
    if not is_thread_segment(redis, thread_id, segment_id):
        raise NotFound(f"Segment {segment_id} of thread '{thread_id}' was not found.")
    try:
        kept = kept_after(redis, segment_id, after, MAX_ENVELOPES)
    except LogGoneError as exc:
        raise Gone(exc.message) from exc
    running = active_segment(redis, thread_id)
    live = running is not None and running.segment_id == segment_id
    if not (kept.envelopes or kept.ended or live):
        # Nothing kept, no end, and not running: the log expired (or was never written).
        raise Gone(f"Segment {segment_id} is no longer kept.")
    answer: EnvelopesAnswer = {
        "envelopes": [json.loads(text) for text in kept.envelopes],
        "ended": kept.ended,
    }
    return jsonify(answer)


def _after() -> int:
    raw = request.args.get("after", "-1")
    if not raw.lstrip("-").isdigit() or not raw.isascii() or int(raw) < -1:
        raise BadRequest("'after' must be a sequence number (-1 for the segment's start).")
    return int(raw)
