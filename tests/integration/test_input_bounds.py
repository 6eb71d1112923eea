"""Issue 16: every refusal of a POST is a 4xx before headers and writes nothing; a Redis
outage at enqueue is a 503 with Retry-After. Real store and Redis, no worker: an
accepted turn just lands on the queue."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
import requests
from flask.testing import FlaskClient

from relayline.shared.persistence import Store
from relayline.web import MAX_BODY_BYTES
from tests.support.http_app import http_app, thread_count
from tests.support.stack import WebServer, fresh_env
from tests.support.web_process import WebProcess

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
    assert set(body) - {"code"} == {"error", "type"}  # a code where one applies
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


# -- issue 34: text every store takes, ids, chunked bodies ------------------------------

#: a thread the tests claim first, for routes that answer 404 before reading the body
KNOWN = "t-known"


def _claim(test_client: FlaskClient) -> None:
    form = {"socket_id": "1.1", "channel_name": f"private-thread-{KNOWN}"}
    assert test_client.post("/pusher/auth", data=form).status_code == 200


def _raw(test_client: FlaskClient, path: str, body: Any) -> Any:
    # json.dumps spells a lone surrogate "\ud800", as a browser's JSON.stringify does
    return test_client.post(path, data=json.dumps(body), content_type="application/json")


def _vercel_turn(thread_id: str, **message: Any) -> dict[str, Any]:
    user = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}], **message}
    return {"id": thread_id, "messages": [user]}


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        (
            "/agui",
            _turn("t-s", messages=[{"id": "m\ud800", "role": "user", "content": "hi"}]),
            "'messages[0].id'",
        ),
        (
            "/agui",
            _turn("t-s", messages=[{"id": "m1", "role": "user", "content": "hi\udc00"}]),
            "'messages[0].content'",
        ),
        ("/agui", _turn("t-s", runId="r\ud800"), "'runId'"),
        ("/agui", _turn("t-s", state={"draft": ["a", "b\ud800"]}), "'state.draft[1]'"),
        ("/agui", _turn("t-s", state={"\ud800": 1}), "A key of 'state'"),
        ("/agui", _turn("t-s", forwardedProps={"a b": "\udbff"}), "'forwardedProps[\"a b\"]'"),
        (
            "/agui",
            _turn("t-s", tools=[{"name": "x", "description": "\ud800"}]),
            "'tools[0].description'",
        ),
        ("/api/chat", _vercel_turn("t-s", id="m\ud800"), "'messages[0].id'"),
        (
            "/api/chat",
            _vercel_turn("t-s", parts=[{"type": "text", "text": "\ud800"}]),
            "'messages[0].parts[0].text'",
        ),
        ("/api/threads/t-s/messages", {"content": "hi\ud800"}, "'content'"),
        ("/api/threads/t-s/messages", {"content": "hi", "\ud800": 1}, "A key of the body"),
    ],
)
def test_a_lone_surrogate_is_400_naming_the_field(
    client: tuple[FlaskClient, Store, str], route: str, body: Any, field: str
) -> None:
    test_client, store, redis_url = client
    refused = _refused(_raw(test_client, route, body))
    assert refused["type"] == "InvalidTextError"
    assert refused["error"].startswith(f"{field} is not valid Unicode text"), refused
    assert thread_count(store) == 0
    assert redis.Redis.from_url(redis_url).llen("celery") == 0


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        # fault 9: refused after the headers (200, RUN_STARTED, RUN_ERROR) before
        (
            "/agui",
            _turn("t-c", messages=[{"id": "m\x01", "role": "user", "content": "hi"}]),
            "'messages[0].id'",
        ),
        (
            "/agui",
            _turn(
                "t-c",
                messages=[
                    {"id": "a\x00", "role": "assistant", "content": "earlier"},
                    {"id": "m1", "role": "user", "content": "hi"},
                ],
            ),
            "'messages[0].id'",
        ),
        ("/agui", _turn("t-c", runId="r\x1b"), "'runId'"),
        (
            "/agui",
            _turn(
                "t-c",
                messages=[
                    {
                        "id": "a1",
                        "role": "assistant",
                        "toolCalls": [{"id": "c\x7f", "type": "function"}],
                    },
                    {"id": "m1", "role": "user", "content": "hi"},
                ],
            ),
            "'messages[0].toolCalls[0].id'",
        ),
        (
            "/agui",
            _turn("t-c", resume=[{"interruptId": "call\x85", "status": "resolved"}]),
            "'resume[0].interruptId'",
        ),
        ("/api/chat", _vercel_turn("t-c", id="m\x00"), "'messages[0].id'"),
        (
            "/api/chat",
            {
                "id": "t-c",
                "messages": [
                    {
                        "id": "a1",
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool-x",
                                "toolCallId": "c\n",
                                "state": "output-available",
                                "output": 1,
                            }
                        ],
                    }
                ],
            },
            "'messages[0].parts[0].toolCallId'",
        ),
        (f"/api/threads/{KNOWN}/tool-results", {"call\x00": {"result": "x"}}, "The call id"),
        (f"/api/threads/{KNOWN}/approvals", {"call\x01": "approve"}, "The call id"),
    ],
)
def test_a_control_character_in_an_id_is_400_before_headers(
    client: tuple[FlaskClient, Store, str], route: str, body: Any, field: str
) -> None:
    test_client, store, redis_url = client
    _claim(test_client)
    refused = _refused(_raw(test_client, route, body))
    assert refused["type"] == "InvalidTextError"
    assert refused["error"].startswith(field) and "control character" in refused["error"]
    assert thread_count(store) == 1  # the claimed one only
    assert redis.Redis.from_url(redis_url).llen("celery") == 0


def test_a_control_character_in_free_text_is_taken(client: tuple[FlaskClient, Store, str]) -> None:
    test_client, _, redis_url = client
    # JSON carries it as an escape to the database and the broker alike.
    body = _turn("t-nul", messages=[{"id": "m1", "role": "user", "content": "a\x00b\x1bc"}])
    response = _raw(test_client, "/agui", body)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    response.close()
    assert redis.Redis.from_url(redis_url).llen("celery") == 1


def test_an_active_stream_id_with_a_control_character_is_400(
    client: tuple[FlaskClient, Store, str],
) -> None:
    test_client, _, _ = client
    _claim(test_client)
    error = _refused(_raw(test_client, f"/api/chat/{KNOWN}/stop", {"activeStreamId": "a\x00"}))
    assert "control characters" in error["error"]


@pytest.mark.parametrize("route", ["/agui", "/api/chat"])
def test_a_new_message_id_over_64_characters_is_400_before_headers(
    client: tuple[FlaskClient, Store, str], route: str
) -> None:
    # Stored with the message (the agent takes 1-64 characters): refused after the
    # headers before, though any id up to 128 passed.
    test_client, store, redis_url = client
    turn = _turn("t-65") if route == "/agui" else _vercel_turn("t-65")
    turn["messages"][0]["id"] = "m" * 65
    assert "64" in _refused(_raw(test_client, route, turn))["error"]
    assert thread_count(store) == 0
    turn["messages"][0]["id"] = "m" * 64
    response = _raw(test_client, route, turn)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    response.close()
    assert redis.Redis.from_url(redis_url).llen("celery") == 1


def test_query_ids_reach_no_database_with_a_control_character(
    client: tuple[FlaskClient, Store, str],
) -> None:
    test_client, _, _ = client
    _claim(test_client)
    refused = _refused(test_client.get(f"/agui/threads/{KNOWN}", query_string="before=m%00"))
    assert refused["error"].startswith("'before' holds a control character")
    forged = base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", "t\x00"]).encode())
    refused = _refused(test_client.get("/api/threads", query_string={"cursor": forged.decode()}))
    assert "cursor" in refused["error"]


def test_a_refusal_is_one_log_line(
    client: tuple[FlaskClient, Store, str], caplog: pytest.LogCaptureFixture
) -> None:
    test_client, _, _ = client
    with caplog.at_level("INFO", logger="relayline.web"):
        _refused(_raw(test_client, "/api/threads/t-log/messages", {"content": "\ud800\n"}))
    lines = [r.getMessage() for r in caplog.records if r.name == "relayline.web"]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "400 InvalidTextError" in lines[0] and "/api/threads/t-log/messages" in lines[0]


def _chunked(body: bytes, piece: int = 64 * 1024) -> Iterator[bytes]:
    # A generator makes requests send Transfer-Encoding: chunked, with no length.
    for start in range(0, len(body), piece):
        yield body[start : start + piece]


def _padded(size: int) -> bytes:
    """A native message body of exactly ``size`` bytes (its content too large to take)."""
    frame = b'{"content": ""}'
    return frame[:-2] + b"x" * (size - len(frame)) + frame[-2:]


@pytest.fixture(params=["gunicorn", "werkzeug"])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, redis_url: str
) -> Iterator[tuple[str, Store]]:
    """The web app on a real port: the production server (gunicorn, gevent) and the one
    the pipeline tests run (werkzeug's, threaded); each decodes chunked bodies itself."""
    env = fresh_env(tmp_path, redis_url)
    store = Store(env["DATABASE_URL"], migrate=False)
    server: WebProcess | WebServer
    server = WebProcess(env, tmp_path, "web") if request.param == "gunicorn" else WebServer(env)
    try:
        yield server.url, store
    finally:
        server.stop()
        store.dispose()


def test_a_chunked_body_over_the_limit_is_413(served: tuple[str, Store]) -> None:
    # Fault 10: read cut short at 1 MiB and refused as "must be a JSON object".
    url, store = served
    for size in (MAX_BODY_BYTES + 1, 2 * MAX_BODY_BYTES):
        response = requests.post(
            f"{url}/api/threads/t-chunk/messages",
            data=_chunked(_padded(size)),
            headers={"Content-Type": "application/json"},
            timeout=60,
        )
        assert response.status_code == 413, response.text[:300]
        assert response.json() == {
            "error": "The request body is larger than 1048576 bytes (1 MiB).",
            "type": "RequestEntityTooLarge",
            "code": "BODY_TOO_LARGE",
        }
    assert thread_count(store) == 0


def test_a_chunked_body_at_the_limit_is_read_whole(served: tuple[str, Store]) -> None:
    url, store = served
    response = requests.post(
        f"{url}/api/threads/t-chunk/messages",
        data=_chunked(_padded(MAX_BODY_BYTES)),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    # Parsed whole: refused for its content's size, not its own.
    assert response.status_code == 400, response.text[:300]
    assert "'content' is larger than" in response.json()["error"]
    small = requests.post(
        f"{url}/api/threads/t-chunk/messages",
        data=_chunked(b'{"content": "\\ud800"}'),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert small.status_code == 400 and small.json()["type"] == "InvalidTextError"
    assert thread_count(store) == 0


def test_an_announced_body_over_the_limit_is_the_same_413(served: tuple[str, Store]) -> None:
    url, _ = served
    response = requests.post(
        f"{url}/api/threads/t-chunk/messages",
        data=_padded(MAX_BODY_BYTES + 1),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 413
    assert response.json()["error"] == "The request body is larger than 1048576 bytes (1 MiB)."
