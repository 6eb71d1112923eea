"""Turns sent to the broker that no worker has started yet: the depth admission control
limits (web.admission) and ``/readyz`` shows.

A sorted set of segment stream ids scored by the Redis clock at send, one for all and
one per owner (``relayline:{queued}`` and ``relayline:{queued}:owner:<owner>``, one
hash tag: one cluster slot, so a script may touch both). The web adds a turn as it
sends it (``admit``: the limits are checked and the turn added in one script, so two
web processes never both take the last place); the task removes it as it starts
(``started``). A removal lost with a killed process or a purged queue costs nothing
lasting: entries older than ``max_age`` seconds are trimmed at every admission and
count, so the depth is never over-counted for longer than that.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import cast

import redis
from redis.client import Pipeline

from relayline.channels.keys import QUEUED_KEY, owner_queued_key


class Refusal(enum.Enum):
    """Which limit a refused turn met."""

    GLOBAL = 1
    OWNER = 2


def admit(
    client: redis.Redis,
    segment_id: str,
    owner: str,
    *,
    limit: int,
    owner_limit: int,
    max_age: float,
    then: Callable[[Pipeline], None] | None = None,
) -> Refusal | None:
    """Add the turn unless a limit (0: none) is reached; the limit it met, else None.
    ``then`` queues what an admitted turn does next (the web's announcement): with no
    limit set nothing can refuse, so those commands share the admission's round trip;
    with a limit they run only once the turn is admitted (a refusal leaves nothing)."""
    args = (2, QUEUED_KEY, owner_queued_key(owner), segment_id, limit, owner_limit, float(max_age))
    pipe = client.pipeline(transaction=False)
    pipe.eval(_ADMIT, *args)
    if then is not None and not limit and not owner_limit:
        then(pipe)
        then = None
    code = int(cast(int, pipe.execute()[0]))
    if code:
        return Refusal(code)
    if then is not None:
        pipe = client.pipeline(transaction=False)
        then(pipe)
        pipe.execute()
    return None


def started(client: redis.Redis, segment_id: str, owner: str) -> None:
    """The turn left the broker (a task began), or was never sent (its send failed)."""
    pipe = client.pipeline(transaction=False)
    uncount(pipe, segment_id, owner)
    pipe.execute()


def uncount(pipe: Pipeline, segment_id: str, owner: str) -> None:
    """``started``'s commands, queued on a pipeline the caller executes."""
    pipe.zrem(QUEUED_KEY, segment_id)
    pipe.zrem(owner_queued_key(owner), segment_id)


def depth(client: redis.Redis, max_age: float) -> int:
    """How many turns wait in the broker now (those younger than ``max_age``)."""
    return int(cast(int, client.eval(_DEPTH, 1, QUEUED_KEY, float(max_age))))


#: KEYS: global, owner; ARGV: member, limit, owner limit, max age (s). Returns 0 when
#: admitted, else the Refusal's value. The Redis clock: every web host scores alike.
_ADMIT = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1e6
local cutoff = t - tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', cutoff)
local limit, owner_limit = tonumber(ARGV[2]), tonumber(ARGV[3])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return 1 end
if owner_limit > 0 and redis.call('ZCARD', KEYS[2]) >= owner_limit then return 2 end
redis.call('ZADD', KEYS[1], t, ARGV[1])
redis.call('ZADD', KEYS[2], t, ARGV[1])
local keep = math.max(1, math.ceil(tonumber(ARGV[4])))
redis.call('EXPIRE', KEYS[1], keep)
redis.call('EXPIRE', KEYS[2], keep)
return 0
"""
_DEPTH = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
"""
