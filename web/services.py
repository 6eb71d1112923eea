"""What the web process holds: settings, the store, Redis, a Celery client that sends
tasks by name (web never imports ``worker``), and the agent registry."""

from __future__ import annotations

import dataclasses

import redis
from celery import Celery
from flask import Flask, current_app

from shared.persistence import Store
from shared.registry import AgentRegistry
from shared.settings import Settings


@dataclasses.dataclass
class Services:
    settings: Settings
    store: Store
    redis: redis.Redis
    celery: Celery
    registry: AgentRegistry

    @classmethod
    def build(cls, settings: Settings) -> Services:
        if not settings.redis_url:
            raise RuntimeError("Set REDIS_URL: the web process relays through Redis.")
        return cls(
            settings=settings,
            store=Store(settings.database_url),
            redis=redis.Redis.from_url(settings.redis_url),
            celery=Celery("relayline-web", broker=settings.broker_url),
            registry=AgentRegistry.from_settings(settings),
        )

    def close(self) -> None:
        self.redis.close()
        self.store.dispose()

    def init_app(self, app: Flask) -> None:
        app.extensions["relayline"] = self


def services() -> Services:
    found: Services = current_app.extensions["relayline"]
    return found
