"""The dead-letter list: where a worker puts what it took off the broker and cannot run.

One Redis list on ``REDIS_URL`` (whichever broker carries the tasks), newest first, the
newest ``DEAD_LETTER_KEEP`` kept. Every entry is a JSON ``DeadLetter`` with a stable
reason code, and every one is also one error line on the ``relayline.worker`` logger,
so an operator who reads only the log still sees it. What was dead-lettered has been
acknowledged: it is never delivered again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypedDict, get_args

from relayline.channels.keys import DEAD_LETTER
from relayline.shared.jsonutil import dumps
from relayline.worker.resources import resources

logger = logging.getLogger("relayline.worker")

#: entries kept (the oldest go first), and the body characters kept per entry
DEAD_LETTER_KEEP = 1000
BODY_KEEP = 2048
#: body characters the log line carries when the entry could not be recorded
LOGGED_BODY = 200

#: why a message cannot run. Stable: operators alert and count on these.
ReasonCode = Literal[
    "not-an-envelope",  # Redis only: the queue's list held bytes kombu cannot deliver
    "too-large",  # the body (or the raw Redis item) is over its size bound
    "undecodable",  # the body is not JSON, not UTF-8, or of a content type not accepted
    "not-task-shape",  # no task header, or the body is not [args, kwargs, embed]
    "bad-headers",  # a task header of the wrong type or an unreadable eta/expires
    "unknown-task",  # no task of that name on this worker
    "bad-arguments",  # the args and kwargs do not fit the task's parameters
    "too-deep",  # the arguments nest deeper than any request the web accepts
]
REASON_CODES: tuple[ReasonCode, ...] = get_args(ReasonCode)


@dataclass(frozen=True)
class Refusal:
    """Why a message cannot run: its stable code and a detail for a person."""

    code: ReasonCode
    detail: str


class DeadLetter(TypedDict):
    """One entry of the dead-letter list (JSON)."""

    code: ReasonCode
    reason: str
    #: the task name and id from the message's headers; null when it had none
    task: str | None
    id: str | None
    #: the queue it was taken from (the routing key on RabbitMQ)
    queue: str | None
    #: the first BODY_KEEP characters of the body (UTF-8, undecodable bytes replaced)
    body: str
    at: str


def dead_letter(
    refusal: Refusal,
    body: bytes | str,
    *,
    task: str | None = None,
    task_id: str | None = None,
    queue: str | None = None,
) -> None:
    """Record a message that cannot run and log it, in one line; never raises (the
    caller acknowledges the message either way: a broken list must not become a
    redelivery loop)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    entry: DeadLetter = {
        "code": refusal.code,
        "reason": refusal.detail,
        "task": task,
        "id": task_id,
        "queue": queue,
        "body": text[:BODY_KEEP],
        "at": datetime.now(UTC).isoformat(),
    }
    line = "message dead-lettered [%s] task=%s id=%s queue=%s: %s"
    try:
        _record(entry)
    except Exception as exc:
        logger.error(
            line + " (not recorded in %s: %s: %s; body: %r)",
            refusal.code,
            task,
            task_id,
            queue,
            refusal.detail,
            DEAD_LETTER,
            type(exc).__name__,
            exc,
            text[:LOGGED_BODY],
        )
        return
    logger.error(line, refusal.code, task, task_id, queue, refusal.detail)


def _record(entry: DeadLetter) -> None:
    pipe = resources().redis.pipeline(transaction=False)
    pipe.lpush(DEAD_LETTER, dumps(entry))
    pipe.ltrim(DEAD_LETTER, 0, DEAD_LETTER_KEEP - 1)
    pipe.execute()
