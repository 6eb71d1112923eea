"""Per-process resources of a worker: the store, Redis and the agent registry.

Built lazily in each process (after the prefork pool forks), never shared across fork."""

from __future__ import annotations

import dataclasses
import os

import redis

from shared.persistence import Store
from shared.registry import AgentRegistry
from shared.settings import Settings


@dataclasses.dataclass
class Resources:
    settings: Settings
    store: Store
    redis: redis.Redis
    registry: AgentRegistry


_current: tuple[int, Resources] | None = None


def resources() -> Resources:
    global _current
    if _current is None or _current[0] != os.getpid():
        settings = Settings.from_env()
        if not settings.redis_url:
            raise RuntimeError("Set REDIS_URL for the worker.")
        built = Resources(
            settings=settings,
            store=Store(settings.database_url, migrate=False),
            redis=redis.Redis.from_url(settings.redis_url),
            registry=AgentRegistry.from_settings(settings),
        )
        _current = (os.getpid(), built)
    return _current[1]
