"""Which workers are alive, as ``/readyz`` reports them: a sorted set of worker names
(Celery node names) scored by the Redis clock at each one's last beat
(``relayline:workers``). A worker's main process beats every heartbeat interval
(worker.presence) and leaves at a warm shutdown; one that died without leaving drops out
once its beat is older than the heartbeat TTL (trimmed at every read)."""

from __future__ import annotations

from typing import cast

import redis

from relayline.channels.keys import WORKERS_KEY


def beat(client: redis.Redis, name: str, ttl: float) -> None:
    """Say ``name`` is alive now; the set itself lives ``ttl`` seconds past the last beat."""
    client.eval(_BEAT, 1, WORKERS_KEY, name, max(1, round(ttl)))


def leave(client: redis.Redis, name: str) -> None:
    client.zrem(WORKERS_KEY, name)


def live(client: redis.Redis, ttl: float) -> list[str]:
    """The names of the workers whose last beat is younger than ``ttl`` seconds, sorted."""
    names = cast(list[bytes], client.eval(_LIVE, 1, WORKERS_KEY, float(ttl)))
    return sorted(name.decode() for name in names)


_BEAT = """
local now = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(now[1]) + tonumber(now[2]) / 1e6, ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""
_LIVE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - tonumber(ARGV[1]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""
