"""What the web process holds: settings, the store, Redis, a Celery client that sends
tasks by name (web never imports ``worker``), and the agent registry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import redis
from celery import Celery
from flask import Flask, current_app

from relayline.channels.stream.reader import LogMultiplexer
from relayline.process import redis_version
from relayline.shared.auth import IdentityTokens
from relayline.shared.persistence import Store
from relayline.shared.preflight import CachedPreflight
from relayline.shared.registry import AgentRegistry
from relayline.shared.settings import Settings
from relayline.web.broker import web_celery

redis_version.read_once()  # before the first connection of the process


@dataclasses.dataclass
class Services:
    settings: Settings
    store: Store
    redis: redis.Redis
    celery: Celery
    registry: AgentRegistry
    #: the application's ``current_user`` (web.auth.UserLoader), else RELAYLINE_AUTH decides
    user_loader: Callable[[], str | None] | None = None
    #: RELAYLINE_AUTH=jwt's verifier (it caches the identity provider's keys)
    identity: IdentityTokens | None = None
    #: where the blueprints are mounted (``""`` at the root, else e.g. ``"/ai"``)
    url_prefix: str = ""
    #: the one reader of every segment log this app relays (started by its first use)
    logs: LogMultiplexer = dataclasses.field(init=False)
    #: the model preflight /readyz reports (run by its first use, then every minute)
    preflight: CachedPreflight = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.logs = LogMultiplexer(self.redis)
        self.preflight = CachedPreflight(self.registry)

    @classmethod
    def build(cls, settings: Settings) -> Services:
        if not settings.redis_url:
            raise RuntimeError("Set REDIS_URL: the web process relays through Redis.")
        return cls(
            settings=settings,
            store=Store(settings.database_url),
            redis=redis.Redis.from_url(settings.redis_url),
            celery=web_celery(settings.broker_url),
            registry=AgentRegistry.from_settings(settings),
            identity=identity_tokens(settings),
        )

    def close(self) -> None:
        self.logs.close()
        self.redis.close()
        self.store.dispose()

    def init_app(self, app: Flask) -> None:
        app.extensions["relayline"] = self


def identity_tokens(settings: Settings) -> IdentityTokens | None:
    """The verifier of RELAYLINE_AUTH=jwt (one per app: it caches the provider's keys)."""
    if settings.auth != "jwt":
        return None
    config = settings.jwt
    assert config.audience and config.issuer  # Settings refuses jwt mode without them
    return IdentityTokens(
        audience=config.audience,
        issuer=config.issuer,
        algorithms=config.accepted_algorithms,
        secret=config.secret,
        jwks_url=config.jwks_url,
        user_claim=config.user_claim,
    )


def services() -> Services:
    found: Services = current_app.extensions["relayline"]
    return found
