"""Issue 16: every refusal of a POST is a 4xx before headers and writes nothing; a Redis
outage at enqueue is a 503 with Retry-After. Real store and Redis, no worker: an
accepted turn just lands on the queue."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis
from flask.testing import FlaskClient

from relayline.shared.persistence import Store
from tests.support.http_app import http_app, thread_count

pytestmark = pytest.mark.integration


@pytest.fixture
def client(tmp_path: Any, redis_url: str) -> Iterator[tuple[FlaskClient, Store, str]]:
    with http_app(tmp_path, redis_url) as (_app, test_client, store):
        yield test_client, store, redis_url


def _nested(depth: int) -> str:
    return "[" * (depth - 1) + "1" + "]" * (depth - 1)


def _turn(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "hello"}],
        **extra,
    }


def _refused(response: Any, status: int = 400) -> dict[str, Any]:
    if response.mimetype == "text/event-stream":
        # Accepted: with no worker its stream would only wait for the relay timeout.
        response.close()
        pytest.fail(f"answered {response.status_code} with a stream, not {status}")
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    assert response.mimetype == "application/json"
    body: dict[str, Any] = response.get_json()
    assert set(body) == {"error", "type"}
    return body


@pytest.mark.parametrize("depth", [65, 500, 1500])
@pytest.mark.parametrize("route", ["/agui", "/api/chat", "/api/threads/t-deep/messages"])
def test_deep_nesting_is_400(
    client: tuple[FlaskClient, Store, str], route: str, depth: int
) -> None:
    test_client, store, _ = client
    # A valid turn of each protocol but for one deeply nested field.
    valid = {
        **_turn("t-deep"),
        "id": "t-deep",
        "content": "x",
        "deep": "@DEEP@",
    }
    if route == "/api/chat":
        valid["messages"] = [
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        ]
    body = json.dumps(valid).replace('"@DEEP@"', _nested(depth))
    response = test_client.post(route, data=body, content_type="application/json")
    error = _refused(response)["error"]
    assert "nested" in error or "JSON object" in error
    assert thread_count(store) == 0


def test_64_levels_are_accepted(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, _, _ = client
    # The body is level 1, so state's value adds 63 more.
    state = json.loads(_nested(63))
    response = test_client.post("/agui", json=_turn("t-64", state={"deep": state}))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    response.close()


def test_500_level_state_is_400(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, store, redis_url = client
    state = {"a": json.loads(_nested(500))}
    body = json.dumps(_turn("t-state", state=state))
    response = test_client.post("/agui", data=body, content_type="application/json")
    _refused(response)
    assert thread_count(store) == 0
    assert redis.Redis.from_url(redis_url).llen("celery") == 0


def test_non_string_message_id_is_400(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, store, _ = client
    for bad in (7, ["m"], {"x": 1}, True):
        body = _turn("t-id", messages=[{"id": bad, "role": "user", "content": "hi"}])
        _refused(test_client.post("/agui", json=body))
        earlier = [{"id": bad, "role": "assistant", "content": "a"}]
        body = _turn("t-id", messages=[*earlier, {"id": "m2", "role": "user", "content": "hi"}])
        _refused(test_client.post("/agui", json=body))
    assert thread_count(store) == 0


def test_over_long_id_is_400_before_headers(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, _, _ = client
    body = _turn("t-long", messages=[{"id": "m" * 129, "role": "user", "content": "hi"}])
    assert "128" in _refused(test_client.post("/agui", json=body))["error"]
    _refused(test_client.post("/agui", json=_turn("t-long", runId="r" * 129)))


@pytest.mark.parametrize("content", ["", "   ", [], [{"type": "text", "text": ""}]])
def test_empty_text_is_400_before_headers(
    client: tuple[FlaskClient, Store, str], content: Any
) -> None:
    test_client, store, redis_url = client
    body = _turn("t-empty", messages=[{"id": "m1", "role": "user", "content": content}])
    _refused(test_client.post("/agui", json=body))
    assert thread_count(store) == 0
    assert redis.Redis.from_url(redis_url).llen("celery") == 0


def test_missing_message_id_is_generated(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, _, redis_url = client
    for thread_id, message in (
        ("t-noid", {"role": "user", "content": "hi"}),
        ("t-nullid", {"id": None, "role": "user", "content": "hi"}),
    ):
        response = test_client.post("/agui", json=_turn(thread_id, messages=[message]))
        assert response.status_code == 200, response.get_data(as_text=True)[:300]
        response.close()
    broker = redis.Redis.from_url(redis_url)
    raw_jobs = cast(list[bytes], broker.lrange("celery", 0, -1))  # sync client
    queued = [json.loads(raw) for raw in raw_jobs]
    assert len(queued) == 2
    for entry in queued:
        text = json.dumps(entry)
        assert '"None"' not in text
    broker.close()


@pytest.mark.parametrize(
    "socket_id", ["", "abc", "1.2.3", "1", "12.x", "1.2\n", "1" * 40 + "." + "1", "\u0661.\u0662"]
)
def test_pusher_invalid_socket_id_is_400_and_writes_nothing(
    client: tuple[FlaskClient, Store, str], socket_id: str
) -> None:
    test_client, store, _ = client
    form = {"socket_id": socket_id, "channel_name": "private-thread-t-push"}
    _refused(test_client.post("/pusher/auth", data=form))
    assert thread_count(store) == 0


@pytest.mark.parametrize(
    "channel", ["private-thread-", "private-thread-" + "x" * 129, "private-thread-a b"]
)
def test_pusher_invalid_channel_is_400_and_writes_nothing(
    client: tuple[FlaskClient, Store, str], channel: str
) -> None:
    test_client, store, _ = client
    form = {"socket_id": "123.456", "channel_name": channel}
    _refused(test_client.post("/pusher/auth", data=form))
    assert thread_count(store) == 0


def test_pusher_valid_auth_claims_the_thread(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, store, _ = client
    form = {"socket_id": "123.456", "channel_name": "private-thread-t-push"}
    response = test_client.post("/pusher/auth", data=form)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert "auth" in response.get_json()
    assert thread_count(store) == 1


@pytest.mark.parametrize("thread_id", ["", "x" * 129, "a b", "-x"])
def test_mercure_invalid_thread_is_400_and_writes_nothing(
    client: tuple[FlaskClient, Store, str], thread_id: str
) -> None:
    test_client, store, _ = client
    _refused(test_client.get("/mercure/token", query_string={"threadId": thread_id}))
    assert thread_count(store) == 0


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("delivery", ["relay", "pusher", "mercure"])
@pytest.mark.parametrize("route", ["/agui", "/api/chat", "/api/threads/t-down/messages"])
def test_redis_down_at_enqueue_is_503(tmp_path: Any, route: str, delivery: str) -> None:
    # Nothing listens on this port: every Redis or broker call fails to connect.
    down = f"redis://127.0.0.1:{_unused_port()}/0"
    body = {
        **_turn("t-down"),
        "id": "t-down",
        "messages": [{"id": "m1", "role": "user", "content": "hi", "parts": []}],
        "content": "hi",
    }
    if route == "/api/chat":
        body["messages"] = [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    with http_app(tmp_path, down) as (_app, test_client, store):
        response = test_client.post(route, json=body, query_string={"delivery": delivery})
        _refused(response, 503)
        assert response.headers["Retry-After"].isdigit()
        assert thread_count(store) == 0


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_are_refused_before_anything_is_stored(
    constant: str, client: tuple[FlaskClient, Store, str]
) -> None:
    test_client, store, _ = client
    body = '{"content": "hi", "extra": ' + constant + "}"
    response = test_client.post(
        "/api/threads/nan-thread/messages", data=body, content_type="application/json"
    )
    assert constant.lstrip("-") in _refused(response)["error"]
    assert store.thread("nan-thread") is None


@pytest.mark.parametrize("parts", [[], [{"type": "text", "text": "   "}]])
def test_an_empty_vercel_turn_is_400_before_headers(
    client: tuple[FlaskClient, Store, str], parts: list[dict[str, str]]
) -> None:
    test_client, store, redis_url = client
    body = {"id": "v-empty", "messages": [{"id": "m1", "role": "user", "parts": parts}]}
    _refused(test_client.post("/api/chat", json=body))
    assert thread_count(store) == 0
    assert redis.Redis.from_url(redis_url).llen("celery") == 0
