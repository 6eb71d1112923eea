"""Admission control (web.admission): past RELAYLINE_MAX_QUEUED_TURNS (all owners) or
RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER turns waiting in the broker, a new turn is a 429
with Retry-After and the usual JSON, and leaves nothing behind; the depth shows in
``/readyz``. The burst runs 200 turns against one real worker: each completes or is
refused, none is lost or half-written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from flask.testing import FlaskClient

from channels.log import active_segment
from shared.auth import mint_token
from shared.persistence import Store
from shared.settings import Settings
from tests.support.http_app import PUSH_ENV, thread_count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env
from web import create_app

pytestmark = pytest.mark.integration

SECRET = "admission-test-secret-" + "x" * 20
BURST = 200


def _refused_429(status: int, headers: Any, body: dict[str, Any]) -> None:
    assert status == 429, body
    assert headers["Retry-After"].isdigit()
    assert set(body) == {"error", "type"} and body["type"] == "QueueFullError"


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
    _refused_429(third.status_code, third.headers, third.get_json())
    assert "You have too many turns" in third.get_json()["error"]
    assert _post(client, "bob", "b-0").status_code == 202  # another owner's own limit
    fourth = _post(client, "bob", "b-1")  # three wait in all: the global limit
    _refused_429(fourth.status_code, fourth.headers, fourth.get_json())
    assert "Too many turns wait" in fourth.get_json()["error"]

    ready = client.get("/readyz").get_json()
    assert ready["queue"] == {"depth": 3, "limit": 3, "perOwnerLimit": 2}
    assert thread_count(store) == 0  # no worker: nothing is stored for anyone yet
    with redis.Redis.from_url(redis_url) as raw:
        # The refused turns announced no segment a reload would wait on.
        assert active_segment(raw, "a-2") is None and active_segment(raw, "b-1") is None
        assert active_segment(raw, "a-0") is not None
        assert raw.llen("celery") == 3  # exactly the accepted turns were sent


def test_a_burst_of_200_turns_on_one_worker_completes_or_is_refused(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"burst {tmp_path.name}") as redis_url:
        env = fresh_env(
            tmp_path,
            redis_url,
            RELAYLINE_MAX_QUEUED_TURNS="8",
            RELAYLINE_WORKER_CONCURRENCY="2",
        )
        worker = Worker(env, "w0")
        web = WebServer(env)
        store = Store(env["DATABASE_URL"])
        try:

            def turn(index: int) -> tuple[int, int, Any, str]:
                response = requests.post(
                    f"{web.url}/api/threads/burst-{index}/messages",
                    json={"content": f"turn {index}"},
                    timeout=120,
                )
                return index, response.status_code, response.headers, response.text

            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=32) as pool:
                answers = list(pool.map(turn, range(BURST)))
            took = time.monotonic() - started
            done = [a for a in answers if a[1] == 200]
            refused = [a for a in answers if a[1] != 200]
            print(f"{BURST} turns in {took:.1f} s: {len(done)} done, {len(refused)} refused")
            assert done and refused  # the limit bit, and the worker kept serving
            for index, status, headers, text in refused:
                _refused_429(status, headers, json.loads(text))
                assert store.thread(f"burst-{index}") is None  # no thread, run or message
                assert store.messages(f"burst-{index}") == []
            for index, _, _, text in done:
                assert text_of(events_of(text)) == f"Hello! turn {index}"
                record = store.current_run(f"burst-{index}")
                assert record is not None and record.status == "completed"
                assert store.messages(f"burst-{index}")[-1].text == f"Hello! turn {index}"
            # Every started turn was uncounted: nothing waits any more.
            queue = requests.get(f"{web.url}/readyz", timeout=10).json()["queue"]
            assert queue == {"depth": 0, "limit": 8, "perOwnerLimit": 0}
        finally:
            store.dispose()
            web.stop()
            worker.stop()
