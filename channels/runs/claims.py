"""First-comer claims in Redis: of several parties racing for one key, exactly one
wins and every other learns who did, in one atomic step (a script: GET, and SET with a
lifetime when nobody holds it).

Two races are decided this way:

- a segment's start (``pending_stop_key``): the web's stop of a turn still waiting in
  the broker against the task starting it. The loser learns the winner: a task that
  finds ``STOP_BEFORE_START`` stops its run as it begins; a stop that finds
  ``run:<id>`` stops that run through the database (``shared.agent.stop.stop_run``).
  The relay's withdrawal of a turn no worker took in time (web.waiting) races the same
  way: a task that finds ``WITHDRAWN`` does nothing at all (no run, no message stored).
- a run's interruption (``continuation_key``): concurrent answers to one interruption
  (approvals, tool results). The first is sent to a worker; every other is refused
  with 409 before anything is sent (``web.continuations``).
"""

from __future__ import annotations

import dataclasses
from typing import Final, cast

import redis
from redis.client import Pipeline

from relayline.channels.keys import continuation_key, pending_stop_key

#: GET the key; when nobody holds it, SET it to ARGV[1] for ARGV[2] seconds. Returns
#: the holder, this caller's value when it won.
_FIRST_WINS: Final = """
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
"""

#: as _FIRST_WINS, but a withdrawal also overrides a stop before start (neither ran)
_WITHDRAW: Final = """
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[3] then return held end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
"""

#: DEL the key only while ARGV[1] holds it (a released claim never drops another's)
_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

#: the value of a segment's start claim taken by a stop (its task has not started)
STOP_BEFORE_START: Final = "stop"
#: the value of a segment's start claim taken by the relay's withdrawal (web.waiting)
WITHDRAWN: Final = "withdrawn"
_RUN_PREFIX: Final = "run:"


def _seconds(keep: float) -> int:
    return max(1, round(keep))


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


@dataclasses.dataclass(frozen=True)
class SegmentStart:
    """Who took a segment's start: a stop before its task started (``stopped``), the
    relay's withdrawal (``withdrawn``, stopped too: an older worker stops such a turn),
    or the task, which names its run (``run_id``)."""

    stopped: bool
    run_id: str | None
    withdrawn: bool = False

    @classmethod
    def parse(cls, raw: bytes | str) -> SegmentStart:
        held = _text(raw)
        if held.startswith(_RUN_PREFIX):
            return cls(False, held[len(_RUN_PREFIX) :])
        if held == WITHDRAWN:
            return cls(True, None, withdrawn=True)
        return cls(True, None)  # "stop" (or "1", as an older web wrote it)


def stop_before_start(client: redis.Redis, segment_id: str, keep: float) -> SegmentStart:
    """Take the segment's start for a stop, unless its task took it first. Kept ``keep``
    seconds (as long as the segment may still start)."""
    key = pending_stop_key(segment_id)
    held = client.eval(_FIRST_WINS, 1, key, STOP_BEFORE_START, _seconds(keep))
    return SegmentStart.parse(cast(bytes, held))


def withdraw_before_start(client: redis.Redis, segment_id: str, keep: float) -> SegmentStart:
    """Take the segment's start for a withdrawal (its turn must never run), unless its
    task took it first; a stop before start is overridden. Kept ``keep`` seconds."""
    key = pending_stop_key(segment_id)
    held = client.eval(_WITHDRAW, 1, key, WITHDRAWN, _seconds(keep), STOP_BEFORE_START)
    return SegmentStart.parse(cast(bytes, held))


def taken_by_task(client: redis.Redis, segment_id: str) -> bool:
    """Whether a task took the segment's start (it may not have written anything yet)."""
    held = client.get(pending_stop_key(segment_id))
    return held is not None and _text(cast(bytes, held)).startswith(_RUN_PREFIX)


def queue_start(pipe: Pipeline, segment_id: str, run_id: str, keep: float) -> None:
    """Queue the task's claim of its segment's start (its reply parses as a
    ``SegmentStart``). Kept ``keep`` seconds: as long as the thread's active pointer
    may name the segment, so that a stop never mistakes a started turn for a waiting one."""
    pipe.eval(_FIRST_WINS, 1, pending_stop_key(segment_id), _RUN_PREFIX + run_id, _seconds(keep))


def claim_continuation(
    client: redis.Redis, run_id: str, attempt: int, segment_id: str, keep: float
) -> str:
    """Claim the answer to the interruption ``run_id`` waits on at ``attempt`` for the
    segment ``segment_id``; the segment holding it (``segment_id`` when this one won)."""
    key = continuation_key(run_id, attempt)
    return _text(cast(bytes, client.eval(_FIRST_WINS, 1, key, segment_id, _seconds(keep))))


def release_continuation(client: redis.Redis, run_id: str, attempt: int, segment_id: str) -> None:
    """Give the claim back (nothing was sent): another request may answer."""
    client.eval(_RELEASE, 1, continuation_key(run_id, attempt), segment_id)
