"""A thread's queued turns (double texting with ``multitask=enqueue``): a Redis list per
thread of jobs ready to send, started one at a time when the thread's run ends.

The web appends a turn whose thread is busy (``queue_turn``), then looks again: a run
that ended meanwhile found nothing to release, so the web releases it itself. Whoever
ends a run (the worker after a segment, the web after stopping a suspended run) calls
``release_next``. LPOP hands each turn to exactly one of them; the released turn's
segment is announced as the thread's active one just before its task is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypedDict, cast

import redis

from relayline.channels.keys import queue_key
from relayline.channels.stream.log import ActiveSegment, LogLimits, announce
from relayline.shared.jobs import TurnJobJSON

#: (task name, job JSON) -> sends the task (Celery's send_task, by name)
Send = Callable[[str, TurnJobJSON], None]


class QueuedTurn(TypedDict):
    task: str
    job: TurnJobJSON
    protocol: str
    streamId: str


def queue_turn(client: redis.Redis, thread_id: str, turn: QueuedTurn, keep: float) -> int:
    """Append ``turn``; its position (1 = next). The queue lives ``keep`` seconds after
    its last append (a thread nobody finishes must not hold turns forever)."""
    pipe = client.pipeline(transaction=True)
    pipe.rpush(queue_key(thread_id), json.dumps(turn))
    pipe.expire(queue_key(thread_id), max(1, round(keep)))
    position, _ = pipe.execute()
    return int(position)


def queued(client: redis.Redis, thread_id: str) -> int:
    return int(cast(int, client.llen(queue_key(thread_id))))


def release_next(client: redis.Redis, thread_id: str, limits: LogLimits, send: Send) -> bool:
    """Start the thread's next queued turn, if any (call only when its run has ended)."""
    raw = cast(bytes | None, client.lpop(queue_key(thread_id)))
    if raw is None:
        return False
    turn = cast(QueuedTurn, json.loads(raw))
    announce(client, thread_id, ActiveSegment(turn["protocol"], turn["streamId"]), limits)
    send(turn["task"], turn["job"])
    return True


def release_when_idle(
    client: redis.Redis, thread_id: str, limits: LogLimits, send: Send, busy: Callable[[], bool]
) -> bool:
    """Start the thread's next queued turn unless ``busy()`` says a run still holds the
    thread; an empty queue (the common case) costs one Redis read and no ``busy()``."""
    if not queued(client, thread_id) or busy():
        return False
    return release_next(client, thread_id, limits, send)


def drop_queue(client: redis.Redis, thread_id: str) -> None:
    client.delete(queue_key(thread_id))
