"""Admission control (web.admission): past RELAYLINE_MAX_QUEUED_TURNS (all owners) or
RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER turns waiting in the broker, a new turn is a 429
with Retry-After and the usual JSON, and leaves nothing behind; the depth shows in
``/readyz``. The burst of 200 turns against one real worker is in
tests/chaos/test_burst.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from relayline.channels.stream.log import active_segment
from relayline.shared.auth import mint_token
from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.http_app import PUSH_ENV, assert_queue_full, thread_count
from tests.support.stack import fresh_env

pytestmark = pytest.mark.integration

SECRET = "admission-test-secret-" + "x" * 20


@pytest.fixture
def owners_app(tmp_path: Path, redis_url: str) -> Iterator[tuple[FlaskClient, Store, str]]:
    """No worker: every accepted turn stays in the broker, queued."""
    env = fresh_env(
        tmp_path,
        redis_url,
        **PUSH_ENV,
        RELAYLINE_AUTH="token",
        SECRET_KEY=SECRET,
        RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER="2",
        RELAYLINE_MAX_QUEUED_TURNS="3",
    )
    app = create_app(Settings.from_env(env))
    store = Store(env["DATABASE_URL"])
    try:
        yield app.test_client(), store, redis_url
    finally:
        app.extensions["relayline"].close()
        store.dispose()


def _post(client: FlaskClient, user: str, thread_id: str) -> Any:
    return client.post(
        f"/api/threads/{thread_id}/messages",
        json={"content": "hello"},
        query_string={"delivery": "pusher"},
        headers={"Authorization": f"Bearer {mint_token(SECRET, user)}"},
    )


def test_limits_per_owner_and_in_all_refuse_before_anything_is_sent(
    owners_app: tuple[FlaskClient, Store, str],
) -> None:
    client, store, redis_url = owners_app
    assert [_post(client, "alice", f"a-{i}").status_code for i in range(2)] == [202, 202]
    third = _post(client, "alice", "a-2")
    assert_queue_full(third.status_code, third.headers, third.get_json())
    assert "You have too many turns" in third.get_json()["error"]
    assert _post(client, "bob", "b-0").status_code == 202  # another owner's own limit
    fourth = _post(client, "bob", "b-1")  # three wait in all: the global limit
    assert_queue_full(fourth.status_code, fourth.headers, fourth.get_json())
    assert "Too many turns wait" in fourth.get_json()["error"]

    ready = client.get("/readyz").get_json()
    assert ready["queue"] == {"depth": 3, "limit": 3, "perOwnerLimit": 2}
    assert thread_count(store) == 0  # no worker: nothing is stored for anyone yet
    with redis.Redis.from_url(redis_url) as raw:
        # The refused turns announced no segment a reload would wait on.
        assert active_segment(raw, "a-2") is None and active_segment(raw, "b-1") is None
        assert active_segment(raw, "a-0") is not None
        assert raw.llen("celery") == 3  # exactly the accepted turns were sent
