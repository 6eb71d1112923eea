"""A person's conversations: ``GET /api/threads`` lists them, newest first, with cursor
paging; ``DELETE /api/threads/<id>`` erases one with everything stored about it (its
messages and runs, and its stream logs in Redis), stopping a live run first. After a
delete the thread is a 404 everywhere, as someone else's thread is."""

from __future__ import annotations

import base64
import binascii
import json
import logging
from datetime import datetime

from flask import Blueprint, Response, jsonify, request
from redis.exceptions import RedisError
from werkzeug.exceptions import BadRequest

from relayline.channels.runs.queued_turns import drop_queue
from relayline.channels.stream.log import forget_thread
from relayline.shared.ids import is_thread_id
from relayline.shared.persistence.store import ThreadSummary
from relayline.web.auth import current_user, thread_for
from relayline.web.recovering import shown_statuses
from relayline.web.services import services
from relayline.web.stop import stop_and_wait

logger = logging.getLogger("relayline.web")

bp = Blueprint("threads", __name__)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: how long a delete waits for a live run to act on its stop before erasing it anyway
STOP_WAIT_SECONDS = 10.0


@bp.get("/api/threads")
def list_threads() -> Response:
    raw_limit = request.args.get("limit", str(DEFAULT_LIMIT))
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MAX_LIMIT:
        raise BadRequest(f"'limit' must be an integer from 1 to {MAX_LIMIT}.")
    limit = int(raw_limit)
    after = _decode(request.args.get("cursor"))
    # One more than asked: whether a next page exists, without a count query.
    found = services().store.list_threads(current_user(), limit=limit + 1, after=after)
    page = found[:limit]
    cursor = _encode(page[-1]) if len(found) > limit else None
    return jsonify({"threads": [_line(t, _recovering(page)) for t in page], "cursor": cursor})


def _recovering(page: list[ThreadSummary]) -> set[str]:
    """The page's threads whose running run lost its worker (web.recovering)."""
    svc = services()
    running = [s.id for s in page if s.status == "running"]
    records = [r for thread_id in running if (r := svc.store.current_run(thread_id))]
    shown = shown_statuses(svc, records)
    return {r.thread_id for r in records if shown.get(r.run_id) == "recovering"}


@bp.delete("/api/threads/<thread_id>")
def delete_thread(thread_id: str) -> Response:
    thread_for(thread_id, current_user(), must_exist=True)
    svc = services()
    stop_and_wait(svc, thread_id, STOP_WAIT_SECONDS)  # erased after it either way
    svc.store.delete_thread(thread_id)
    try:
        drop_queue(svc.redis, thread_id)  # queued turns die with their thread
        forget_thread(svc.redis, thread_id)
    except RedisError as exc:
        # The logs expire on their own within the retention; the thread is gone already.
        logger.warning("could not erase the stream logs of thread %s: %s", thread_id, exc)
    return Response(status=204)


def _line(summary: ThreadSummary, recovering: set[str]) -> dict[str, object]:
    return {
        "threadId": summary.id,
        "title": summary.title,
        "updated": summary.updated.isoformat(),
        "status": "recovering" if summary.id in recovering else summary.status,
    }


def _encode(summary: ThreadSummary) -> str:
    raw = json.dumps([summary.updated.isoformat(), summary.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str | None) -> tuple[datetime, str] | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        moment, thread_id = json.loads(raw)
        if not is_thread_id(thread_id):  # it goes to the database as it is
            raise ValueError(thread_id)
        return datetime.fromisoformat(moment), thread_id
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise BadRequest("'cursor' is not a cursor this server gave out.") from exc
