"""Settings.from_env with an explicit environment (docs/DESIGN.md section 8)."""

from __future__ import annotations

import re

import pytest

from relayline.shared.settings import (
    DEV_SECRET_KEY,
    MercureSettings,
    PusherSettings,
    Settings,
    child_environment,
)

LONG_SECRET = "a-secret-key-of-at-least-32-characters"
PUBLISHER_KEY = "a-mercure-publisher-key-of-32-chars+"
SUBSCRIBER_KEY = "a-mercure-subscriber-key-of-32-chars"


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.database_url == "sqlite:///relayline.db"
    assert settings.redis_url is None
    assert settings.broker_url is None
    assert settings.agent == "relayline.demo:build"
    assert dict(settings.agents) == {}
    assert settings.auth == "none"
    assert settings.delivery == "relay"
    assert settings.public_url == "http://127.0.0.1:8000"
    assert settings.port == 8000
    assert settings.pusher == PusherSettings() and not settings.pusher.configured
    assert settings.mercure == MercureSettings() and not settings.mercure.configured
    assert settings.relay_timeout == 300.0
    assert settings.openai_base_url == "https://api.openai.com/v1"
    assert settings.model is None


def test_empty_values_count_as_unset() -> None:
    settings = Settings.from_env({"RELAYLINE_AUTH": "", "DATABASE_URL": "", "REDIS_URL": ""})
    assert settings.auth == "none"
    assert settings.database_url == "sqlite:///relayline.db"
    assert settings.redis_url is None


def test_values_are_read() -> None:
    env = {
        "DATABASE_URL": "postgresql+psycopg://u:p@db/relayline",
        "REDIS_URL": "redis://cache:6379/0",
        "CELERY_BROKER_URL": "redis://broker:6379/1",
        "RELAYLINE_AGENT": "myapp.agents:build",
        "RELAYLINE_AUTH": "token",
        "SECRET_KEY": LONG_SECRET,
        "RELAYLINE_TOKEN_TTL": "3600",
        "RELAYLINE_DELIVERY": "pusher",
        "RELAYLINE_PUBLIC_URL": "https://chat.example.com/",
        "PORT": "5000",
        "PUSHER_APP_ID": "app",
        "PUSHER_KEY": "key",
        "PUSHER_SECRET": "secret",
        "PUSHER_HOST": "soketi",
        "PUSHER_PORT": "6001",
        "PUSHER_ENCRYPTION_MASTER_KEY_BASE64": "bWFzdGVy",
        "MERCURE_HUB_URL": "http://hub/.well-known/mercure",
        "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
        "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
        "RELAYLINE_RELAY_TIMEOUT": "12.5",
        "OPENAI_API_KEY": "sk-x",
        "OPENAI_BASE_URL": "http://localhost:11434/v1",
        "RELAYLINE_MODEL": "llama3",
    }
    settings = Settings.from_env(env)
    assert settings.database_url == "postgresql+psycopg://u:p@db/relayline"
    assert settings.redis_url == "redis://cache:6379/0"
    assert settings.celery_broker_url == "redis://broker:6379/1"
    assert settings.broker_url == "redis://broker:6379/1"
    assert settings.agent == "myapp.agents:build"
    assert settings.auth == "token"
    assert settings.secret_key == LONG_SECRET
    assert settings.token_ttl == 3600
    assert settings.delivery == "pusher"
    assert settings.public_url == "https://chat.example.com"
    assert settings.port == 5000
    assert settings.pusher == PusherSettings(
        app_id="app",
        key="key",
        secret="secret",
        host="soketi",
        port=6001,
        encryption_master_key_base64="bWFzdGVy",
    )
    assert settings.pusher.configured and settings.pusher.encrypted
    assert settings.mercure == MercureSettings(
        hub_url="http://hub/.well-known/mercure",
        publisher_jwt_key=PUBLISHER_KEY,
        subscriber_jwt_key=SUBSCRIBER_KEY,
    )
    assert settings.mercure.configured
    assert settings.relay_timeout == 12.5
    assert settings.openai_api_key == "sk-x"
    assert settings.openai_base_url == "http://localhost:11434/v1"
    assert settings.model == "llama3"


@pytest.mark.parametrize("delivery", ["relay", "pusher", "mercure"])
def test_every_delivery_is_accepted(delivery: str) -> None:
    assert Settings.from_env({"RELAYLINE_DELIVERY": delivery}).delivery == delivery


def test_invalid_auth_is_rejected() -> None:
    with pytest.raises(ValueError) as caught:
        Settings.from_env({"RELAYLINE_AUTH": "basic"})
    expected = "RELAYLINE_AUTH must be one of ('none', 'token', 'jwt'), got 'basic'."
    assert str(caught.value) == expected


def test_invalid_delivery_is_rejected() -> None:
    with pytest.raises(ValueError) as caught:
        Settings.from_env({"RELAYLINE_DELIVERY": "websocket"})
    assert str(caught.value) == (
        "RELAYLINE_DELIVERY must be one of ('relay', 'pusher', 'mercure'), got 'websocket'."
    )


def test_agents_are_parsed() -> None:
    env = {"RELAYLINE_AGENTS": " support = myapp.agents:support ,sales=myapp.sales:build,, "}
    assert dict(Settings.from_env(env).agents) == {
        "support": "myapp.agents:support",
        "sales": "myapp.sales:build",
    }


@pytest.mark.parametrize("entry", ["support", "=myapp:build", " =myapp:build", "support=myapp"])
def test_invalid_agents_are_rejected(entry: str) -> None:
    message = f"RELAYLINE_AGENTS entries look like id=module:factory, got {entry.strip()!r}."
    with pytest.raises(ValueError, match=re.escape(message)):
        Settings.from_env({"RELAYLINE_AGENTS": f"ok=a:b,{entry}"})


def test_broker_url_falls_back_to_redis_url() -> None:
    settings = Settings.from_env({"REDIS_URL": "redis://cache:6379/0"})
    assert settings.celery_broker_url is None
    assert settings.broker_url == "redis://cache:6379/0"


def test_settings_are_frozen() -> None:
    settings = Settings.from_env({})
    with pytest.raises(AttributeError):
        settings.auth = "token"  # type: ignore[misc]


@pytest.mark.parametrize("value", ["a=:", "a=mod:", "a=:factory", "a=mod:f,a=other:g"])
def test_malformed_or_repeated_agents_are_rejected(value: str) -> None:
    with pytest.raises(ValueError, match="RELAYLINE_AGENTS"):
        Settings.from_env({"RELAYLINE_AGENTS": value})


@pytest.mark.parametrize("name", ["PUSHER_PORT", "RELAYLINE_RELAY_TIMEOUT"])
def test_non_numeric_values_name_the_variable(name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be"):
        Settings.from_env({name: "abc"})


def test_token_auth_refuses_the_development_secret() -> None:
    message = "RELAYLINE_AUTH=token needs SECRET_KEY"
    with pytest.raises(ValueError, match=message):
        Settings.from_env({"RELAYLINE_AUTH": "token"})
    with pytest.raises(ValueError, match=message):
        Settings.from_env({"RELAYLINE_AUTH": "token", "SECRET_KEY": DEV_SECRET_KEY})
    with pytest.raises(ValueError, match=message):
        Settings(auth="token")
    assert Settings.from_env({"RELAYLINE_AUTH": "token", "SECRET_KEY": LONG_SECRET}).auth == "token"
    assert Settings.from_env({}).secret_key == DEV_SECRET_KEY  # fine without token auth


def test_token_auth_refuses_a_short_secret_and_a_lifetime_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="at least 32 characters"):
        Settings.from_env({"RELAYLINE_AUTH": "token", "SECRET_KEY": "s3cret"})
    with pytest.raises(ValueError, match="RELAYLINE_TOKEN_TTL must be positive"):
        Settings.from_env({"RELAYLINE_TOKEN_TTL": "0"})
    assert Settings.from_env({}).token_ttl == 86_400


@pytest.mark.parametrize(
    ("env", "configured"),
    [
        ({"PUSHER_APP_ID": "a", "PUSHER_KEY": "k", "PUSHER_SECRET": "s"}, True),
        ({"PUSHER_APP_ID": "a", "PUSHER_KEY": "k"}, False),
        ({"PUSHER_KEY": "k", "PUSHER_SECRET": "s", "PUSHER_HOST": "soketi"}, False),
    ],
)
def test_pusher_is_configured_with_app_id_key_and_secret(
    env: dict[str, str], configured: bool
) -> None:
    assert Settings.from_env(env).pusher.configured is configured


@pytest.mark.parametrize(
    ("env", "configured"),
    [
        ({"MERCURE_HUB_URL": "h", "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}, False),
        ({"MERCURE_HUB_URL": "h", "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY}, False),
        (
            {
                "MERCURE_HUB_URL": "h",
                "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
                "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
            },
            True,
        ),
    ],
)
def test_mercure_is_configured_with_the_hub_and_both_keys(
    env: dict[str, str], configured: bool
) -> None:
    assert Settings.from_env(env).mercure.configured is configured


def test_a_child_environment_keeps_ours_between_defaults_and_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RELAYLINE_TEST_CHILD", "ours")
    monkeypatch.setenv("RELAYLINE_TEST_KEPT", "kept")
    env = child_environment(
        {"RELAYLINE_TEST_CHILD": "default", "RELAYLINE_TEST_NEW": "default"},
        {"RELAYLINE_TEST_KEPT": "override"},
    )
    assert env["RELAYLINE_TEST_CHILD"] == "ours"
    assert env["RELAYLINE_TEST_NEW"] == "default"
    assert env["RELAYLINE_TEST_KEPT"] == "override"


def test_the_heartbeat_defaults_recover_a_lost_worker_within_30_seconds() -> None:
    settings = Settings.from_env({})
    # Lapse after the ttl, seen by the next sweep: worst case ttl + interval.
    assert settings.heartbeat_ttl + settings.heartbeat_interval <= 20


def test_the_heartbeat_is_configurable() -> None:
    env = {"RELAYLINE_HEARTBEAT_TTL": "6", "RELAYLINE_HEARTBEAT_INTERVAL": "2"}
    settings = Settings.from_env(env)
    assert (settings.heartbeat_ttl, settings.heartbeat_interval) == (6.0, 2.0)


@pytest.mark.parametrize(("ttl", "interval"), [("5", "5"), ("5", "9")])
def test_a_renewal_slower_than_the_heartbeat_ttl_is_refused(ttl: str, interval: str) -> None:
    env = {"RELAYLINE_HEARTBEAT_TTL": ttl, "RELAYLINE_HEARTBEAT_INTERVAL": interval}
    with pytest.raises(ValueError, match="RELAYLINE_HEARTBEAT_INTERVAL"):
        Settings.from_env(env)


def test_the_segment_log_limits_are_configurable() -> None:
    env = {
        "RELAYLINE_STREAM_RETENTION": "120",
        "RELAYLINE_STREAM_MAX_AGE": "7200",
        "RELAYLINE_STREAM_MAX_EVENTS": "1000",
    }
    settings = Settings.from_env(env)
    assert (settings.stream_retention, settings.stream_max_age) == (120.0, 7200.0)
    assert settings.stream_max_events == 1000
    assert Settings.from_env({}).stream_retention == 600.0  # the default
    with pytest.raises(ValueError, match="RELAYLINE_STREAM_MAX_EVENTS"):
        Settings.from_env({"RELAYLINE_STREAM_MAX_EVENTS": "many"})


@pytest.mark.parametrize(
    ("value", "direct"), [(None, True), ("1", True), ("0", False), ("off", False), ("False", False)]
)
def test_direct_relay_writes_are_on_unless_turned_off(value: str | None, direct: bool) -> None:
    env = {} if value is None else {"RELAYLINE_RELAY_DIRECT": value}
    assert Settings.from_env(env).relay_direct is direct


def test_postgres_urls_as_hosts_give_them_use_psycopg_3() -> None:
    for given in ("postgres://u:p@db:5432/app", "postgresql://u:p@db:5432/app"):
        settings = Settings.from_env({"DATABASE_URL": given})
        assert settings.database_url == "postgresql+psycopg://u:p@db:5432/app"
    kept = "postgresql+psycopg://u@db/app"
    assert Settings.from_env({"DATABASE_URL": kept}).database_url == kept


def test_waiting_for_a_worker_defaults_and_values() -> None:
    """How long a relayed turn waits for a worker before it is said queued (2 s) and
    before it is withdrawn (60 s), read from the environment (web.waiting)."""
    default = Settings.from_env({})
    assert (default.queued_notice_seconds, default.no_worker_seconds) == (2.0, 60.0)
    env = {"RELAYLINE_QUEUED_NOTICE_SECONDS": "0.5", "RELAYLINE_NO_WORKER_SECONDS": "7"}
    settings = Settings.from_env(env)
    assert (settings.queued_notice_seconds, settings.no_worker_seconds) == (0.5, 7.0)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"RELAYLINE_QUEUED_NOTICE_SECONDS": "0"},
            "RELAYLINE_QUEUED_NOTICE_SECONDS must be positive",
        ),
        ({"RELAYLINE_NO_WORKER_SECONDS": "-3"}, "RELAYLINE_NO_WORKER_SECONDS must be positive"),
        ({"RELAYLINE_NO_WORKER_SECONDS": "soon"}, "RELAYLINE_NO_WORKER_SECONDS must be a float"),
        (
            {"RELAYLINE_QUEUED_NOTICE_SECONDS": "10", "RELAYLINE_NO_WORKER_SECONDS": "5"},
            "shorter than RELAYLINE_NO_WORKER_SECONDS (got 10 and 5)",
        ),
    ],
)
def test_waiting_for_a_worker_refuses_bad_values(env: dict[str, str], says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        Settings.from_env(env)


def test_client_buffer_bytes_defaults_to_4_mib_and_must_be_positive() -> None:
    assert Settings.from_env({}).client_buffer_bytes == 4 * 1024 * 1024
    env = {"RELAYLINE_CLIENT_BUFFER_BYTES": "65536"}
    assert Settings.from_env(env).client_buffer_bytes == 65536
    for bad in ("0", "-1", "4MB"):
        with pytest.raises(ValueError, match="RELAYLINE_CLIENT_BUFFER_BYTES"):
            Settings.from_env({"RELAYLINE_CLIENT_BUFFER_BYTES": bad})
