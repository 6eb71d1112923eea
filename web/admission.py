"""Admission control: a turn is refused with 429 (``Retry-After``, the usual
``{"error", "type"}`` JSON) while too many turns wait in the broker, before its segment
is announced or its task sent, so a refused turn leaves nothing behind.

The limits are RELAYLINE_MAX_QUEUED_TURNS (all owners) and
RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER (each owner), both off by default; the depth is
kept in Redis (channels.backlog) whether or not a limit is set, for ``/readyz``. A turn
that waits behind its own thread's run (``multitask=enqueue``) is in the thread's list,
not the broker, and counts once it is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from redis.client import Pipeline
from redis.exceptions import RedisError
from werkzeug.exceptions import TooManyRequests

from relayline.channels.keys import active_key
from relayline.channels.runs.backlog import Refusal, admit, started
from relayline.channels.stream.log import ActiveSegment
from relayline.web.services import Services

logger = logging.getLogger("relayline.web")

#: what a refused client is told to wait, in seconds: about the time a busy worker
#: takes to start a few turns
RETRY_AFTER_SECONDS = 5


class QueueFullError(TooManyRequests):
    """Too many turns wait for a worker: nothing was sent or stored (HTTP 429)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=RETRY_AFTER_SECONDS)


def admit_turn(
    svc: Services, segment_id: str, owner: str, then: Callable[[Pipeline], None] | None = None
) -> None:
    """Count the turn as queued, or refuse it with ``QueueFullError``; ``then`` queues
    what an admitted turn does next (channels.backlog.admit). A Redis outage
    propagates: the send that follows could not work either (503)."""
    settings = svc.settings
    refusal = admit(
        svc.redis,
        segment_id,
        owner,
        limit=settings.max_queued_turns,
        owner_limit=settings.max_queued_turns_per_owner,
        max_age=settings.stream_max_age,
        then=then,
    )
    if refusal is Refusal.GLOBAL:
        raise QueueFullError(
            f"Too many turns wait for a worker ({settings.max_queued_turns}); "
            f"nothing was sent. Retry in {RETRY_AFTER_SECONDS} s."
        )
    if refusal is Refusal.OWNER:
        raise QueueFullError(
            f"You have too many turns waiting for a worker "
            f"({settings.max_queued_turns_per_owner}); nothing was sent. "
            f"Retry in {RETRY_AFTER_SECONDS} s."
        )


def withdraw(svc: Services, segment_id: str, owner: str) -> None:
    """Uncount a turn whose send failed."""
    try:
        started(svc.redis, segment_id, owner)
    except RedisError as exc:  # trimmed by age later
        logger.warning("could not uncount the unsent turn %s: %s", segment_id, exc)


def retract(svc: Services, thread_id: str, segment: ActiveSegment) -> None:
    """Take back the announcement of a segment that was never sent, unless another
    segment was announced since: a reload must not wait on a stream nobody writes."""
    try:
        svc.redis.eval(_RETRACT, 1, active_key(thread_id), segment.pointer)
    except RedisError as exc:  # expires with the log's maximum age
        logger.warning("could not retract the unsent segment of thread %s: %s", thread_id, exc)


_RETRACT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
