"""Per-process resources of a worker: the store, Redis and the agent registry.

Built lazily once per process (after the prefork pool forks; never shared across fork)
and shared by every task of that process. Under the threads pool, up to
``RELAYLINE_WORKER_CONCURRENCY`` turns use them at once, so each is thread-safe: the
store's engine hands each thread its own pooled connection (a pool as large as the
concurrency, so no turn waits for another's connection), the Redis client's connection
pool does the same, and the agent registry builds each agent spec once under a lock."""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import TypedDict

import redis

from relayline.shared.persistence import Store
from relayline.shared.registry import AgentRegistry
from relayline.shared.settings import Settings

#: database connections beyond the turns' share (opened when asked for, closed when
#: returned): the sweeper's, and slack for a burst
EXTRA_CONNECTIONS = 4
#: connections a worker's turns hold at most at once. A turn holds one only while it
#: reads or commits (no store method takes a second one), so a few dozen serve
#: hundreds of turns; past it a turn waits for a free one (pool_timeout) instead of
#: opening more: 100 turns starting at once on a pool of 104 ran PostgreSQL (100
#: connections by default) out of connections and failed 5 turns (bench/scale.py).
MAX_POOL_SIZE = 32


@dataclasses.dataclass
class Resources:
    settings: Settings
    store: Store
    redis: redis.Redis
    registry: AgentRegistry


_current: tuple[int, Resources] | None = None
#: pool threads asking at once build the resources once
_building = threading.Lock()


class PoolOptions(TypedDict):
    """SQLAlchemy ``create_engine`` pool options."""

    pool_size: int
    max_overflow: int
    pool_timeout: int


def pool_options(settings: Settings) -> PoolOptions:
    """Engine pool options for a worker that runs ``worker_concurrency`` turns at once:
    one connection per turn up to MAX_POOL_SIZE; past it, turns wait for one."""
    return {
        "pool_size": min(settings.worker_concurrency, MAX_POOL_SIZE),
        "max_overflow": EXTRA_CONNECTIONS,
        # A turn waits this long for a connection before its write fails (never forever).
        "pool_timeout": 30,
    }


def resources() -> Resources:
    global _current
    current = _current
    if current is not None and current[0] == os.getpid():
        return current[1]
    with _building:
        if _current is None or _current[0] != os.getpid():
            settings = Settings.from_env()
            if not settings.redis_url:
                raise RuntimeError("Set REDIS_URL for the worker.")
            built = Resources(
                settings=settings,
                store=Store(settings.database_url, migrate=False, **pool_options(settings)),
                redis=redis.Redis.from_url(settings.redis_url),
                registry=AgentRegistry.from_settings(settings),
            )
            _current = (os.getpid(), built)
        return _current[1]
