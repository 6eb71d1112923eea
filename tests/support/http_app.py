"""A Flask test client on a real store and Redis, with Pusher and Mercure configured
(auth is signed locally, no server needed) and no worker: accepted turns stay queued."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.stack import fresh_env

PUSH_ENV = {
    "PUSHER_APP_ID": "1",
    "PUSHER_KEY": "fuzz-key",
    "PUSHER_SECRET": "fuzz-secret",
    "MERCURE_HUB_URL": "http://127.0.0.1:9/.well-known/mercure",
    "MERCURE_PUBLISHER_JWT_KEY": "p" * 32,
    "MERCURE_SUBSCRIBER_JWT_KEY": "s" * 32,
}


@contextmanager
def http_app(tmp: Path, redis_url: str) -> Iterator[tuple[Flask, FlaskClient, Store]]:
    # No worker: a relayed turn's first bytes are its queued status (web.waiting), sent
    # as soon as its heartbeat would be, so that a test client's request returns at once.
    env = fresh_env(tmp, redis_url, **PUSH_ENV, RELAYLINE_QUEUED_NOTICE_SECONDS="0.05")
    app = create_app(Settings.from_env(env), {"RELAYLINE_HEARTBEAT_SECONDS": 0.05})
    store = Store(env["DATABASE_URL"])
    try:
        yield app, app.test_client(), store
    finally:
        app.extensions["relayline"].close()
        store.dispose()


def thread_count(store: Store) -> int:
    import sqlalchemy as sa

    with store.engine.connect() as connection:
        return int(connection.execute(sa.text("SELECT count(*) FROM threads")).scalar_one())


def assert_queue_full(status: int, headers: Any, body: dict[str, Any]) -> None:
    """The admission refusal (web.admission): 429, Retry-After and the usual JSON."""
    assert status == 429, body
    assert headers["Retry-After"].isdigit()
    assert set(body) == {"error", "type"} and body["type"] == "QueueFullError"
