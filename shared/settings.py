"""The one place that reads the environment (docs/DESIGN.md section 8)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

DELIVERIES = ("relay", "pusher", "mercure")
AUTH_MODES = ("none", "token")


@dataclasses.dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///relayline.db"
    redis_url: str | None = None
    celery_broker_url: str | None = None
    agent: str = "relayline.demo:build"
    agents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    auth: str = "none"
    secret_key: str = "dev-insecure-secret"
    delivery: str = "relay"
    public_url: str = "http://127.0.0.1:8000"
    pusher_app_id: str | None = None
    pusher_key: str | None = None
    pusher_secret: str | None = None
    pusher_host: str | None = None
    pusher_port: int | None = None
    pusher_encryption_master_key_base64: str | None = None
    mercure_hub_url: str | None = None
    mercure_publisher_jwt_key: str | None = None
    mercure_subscriber_jwt_key: str | None = None
    relay_timeout: float = 300.0
    openai_api_key: str | None = None
    openai_base_url: str = "https://api.openai.com/v1"
    model: str | None = None

    @property
    def broker_url(self) -> str | None:
        return self.celery_broker_url or self.redis_url

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name)
            return value if value not in (None, "") else None

        auth = get("RELAYLINE_AUTH") or "none"
        if auth not in AUTH_MODES:
            raise ValueError(f"RELAYLINE_AUTH must be one of {AUTH_MODES}, got {auth!r}.")
        delivery = get("RELAYLINE_DELIVERY") or "relay"
        if delivery not in DELIVERIES:
            raise ValueError(f"RELAYLINE_DELIVERY must be one of {DELIVERIES}, got {delivery!r}.")
        port = _number(get("PUSHER_PORT"), "PUSHER_PORT", int)
        timeout = _number(get("RELAYLINE_RELAY_TIMEOUT"), "RELAYLINE_RELAY_TIMEOUT", float)
        return cls(
            database_url=get("DATABASE_URL") or cls.database_url,
            redis_url=get("REDIS_URL"),
            celery_broker_url=get("CELERY_BROKER_URL"),
            agent=get("RELAYLINE_AGENT") or cls.agent,
            agents=_parse_agents(get("RELAYLINE_AGENTS") or ""),
            auth=auth,
            secret_key=get("SECRET_KEY") or cls.secret_key,
            delivery=delivery,
            public_url=(get("RELAYLINE_PUBLIC_URL") or cls.public_url).rstrip("/"),
            pusher_app_id=get("PUSHER_APP_ID"),
            pusher_key=get("PUSHER_KEY"),
            pusher_secret=get("PUSHER_SECRET"),
            pusher_host=get("PUSHER_HOST"),
            pusher_port=int(port) if port is not None else None,
            pusher_encryption_master_key_base64=get("PUSHER_ENCRYPTION_MASTER_KEY_BASE64"),
            mercure_hub_url=get("MERCURE_HUB_URL"),
            mercure_publisher_jwt_key=get("MERCURE_PUBLISHER_JWT_KEY"),
            mercure_subscriber_jwt_key=get("MERCURE_SUBSCRIBER_JWT_KEY"),
            relay_timeout=float(timeout) if timeout is not None else cls.relay_timeout,
            openai_api_key=get("OPENAI_API_KEY"),
            openai_base_url=get("OPENAI_BASE_URL") or cls.openai_base_url,
            model=get("RELAYLINE_MODEL"),
        )


def _number(value: str | None, name: str, kind: type[int] | type[float]) -> float | None:
    if value is None:
        return None
    try:
        number = kind(value)
    except ValueError:
        raise ValueError(f"{name} must be a {kind.__name__}, got {value!r}.") from None
    if number <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}.")
    return number


def _parse_agents(value: str) -> dict[str, str]:
    agents: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in value.split(","))):
        name, sep, target = (part.strip() for part in entry.partition("="))
        module, colon, factory = target.partition(":")
        if not sep or not name or not colon or not module.strip() or not factory.strip():
            raise ValueError(
                f"RELAYLINE_AGENTS entries look like id=module:factory, got {entry!r}."
            )
        if name in agents:
            raise ValueError(f"RELAYLINE_AGENTS names agent {name!r} more than once.")
        agents[name] = target
    return agents
