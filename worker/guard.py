"""Poison jobs stop in the worker's main process, before the prefork pool sees them.

A job nested deeper than any request the web accepts (or far too large) kills the main
process when it is pickled for the pool ("RecursionError while pickling"); its message
then comes back, and every worker that takes it dies too. ``GuardedRequest`` (the
Request class of every relayline task) checks the decoded job first and moves a job
out of bounds to the Redis list ``DEAD_LETTER`` (task, id, reason, truncated body,
time; logged at error level), acknowledged so it is never delivered again.

Bodies Kombu cannot decode at all (not JSON, or nested past Python's recursion limit)
fail before a request exists: ``GuardedConsumer`` dead-letters them on Celery's
decode-error path, which then acknowledges and logs them.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from celery.worker.consumer import Consumer
from celery.worker.request import Request
from celery.worker.state import task_ready

from relayline.channels.keys import DEAD_LETTER
from relayline.shared.jsonutil import depth, dumps

logger = logging.getLogger("relayline.worker")

#: entries kept (the oldest go first), and the body characters kept per entry
DEAD_LETTER_KEEP = 1000
BODY_KEEP = 2048
#: the web's nesting bound on client values (64) plus the levels a job puts above them
#: ([args, kwargs] -> kwargs -> job -> seed -> messages -> message: 6) and slack
MAX_DEPTH = 64 + 8
#: a job carries a turn's seed, never the thread: far below this
MAX_BODY_BYTES = 4 * 1024 * 1024


def refusal(body_size: int, args: Any, kwargs: Any) -> str | None:
    """Why a job may not run, or None when it is within bounds."""
    if body_size > MAX_BODY_BYTES:
        return f"body of {body_size} bytes exceeds {MAX_BODY_BYTES}"
    if depth([args, kwargs], MAX_DEPTH) > MAX_DEPTH:
        return f"nesting depth exceeds {MAX_DEPTH}"
    return None


def dead_letter(task: str, task_id: str, reason: str, body: bytes | str) -> None:
    """Record a refused job where operators can see it; never raises."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    entry = {
        "task": task,
        "id": task_id,
        "reason": reason,
        "body": text[:BODY_KEEP],
        "at": datetime.now(UTC).isoformat(),
    }
    logger.error("job %s of %s dead-lettered: %s", task_id, task, reason)
    try:
        from relayline.worker.resources import resources

        client = resources().redis
        pipe = client.pipeline(transaction=False)
        pipe.lpush(DEAD_LETTER, dumps(entry))
        pipe.ltrim(DEAD_LETTER, 0, DEAD_LETTER_KEEP - 1)
        pipe.execute()
    except Exception:
        logger.exception("could not record dead-lettered job %s", task_id)


class GuardedRequest(Request):
    """A Celery request that refuses a job out of bounds before the pool gets it.

    Celery builds a subclass per task whose ``execute_using_pool`` asks ``revoked()``
    first, in the main process, and drops a revoked request without pickling it: the
    hook a refusal needs (the TaskRevokedError it raises is caught and released)."""

    _checked = False
    _dead_lettered = False

    def revoked(self) -> bool:
        if self._dead_lettered:
            return True
        if self._checked:
            return bool(super().revoked())
        self._checked = True
        body = self.body or b""
        reason = refusal(len(body), self.args, self.kwargs)
        if reason is None:
            return bool(super().revoked())
        dead_letter(self.name, self.id, reason, body)
        self._dead_lettered = True
        task_ready(self)  # out of the worker's reserved set, as a revoked task leaves it
        self.acknowledge()  # never redelivered
        return True


class GuardedConsumer(Consumer):
    """Celery's consumer, recording undecodable messages in the dead-letter list too."""

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        headers = message.headers if isinstance(message.headers, dict) else {}
        task, task_id = str(headers.get("task", "?")), str(headers.get("id", "?"))
        dead_letter(task, task_id, f"undecodable: {type(exc).__name__}", message.body or b"")
        super().on_decode_error(message, exc)
