"""Fuzzed requests to every POST route get no 5xx (issue 16). Derandomized, so CI runs
the same requests each time. A real store and a real Redis database with no worker: an
accepted turn just lands on the queue, and the test flushes it between examples.

Text includes every code point Python's str holds: lone surrogates (valid JSON as
``"\ud800"``, issue 34) and control characters. An accepted job must be text a worker can
store and publish (it encodes as UTF-8), or the worker dies on it after the 200."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import quote

import pytest
import redis
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.http_app import http_app

pytestmark = pytest.mark.integration

#: examples per test; each example sends one request (about 8,600 over ten tests)
EXAMPLES = 860

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: any code point, lone surrogates and control characters included (st.text's default
#: leaves surrogates out)
any_char = st.characters(codec=None, exclude_categories=[])
#: one of the characters issue 34 was about, among others
edge_char = st.sampled_from(["\ud800", "\udfff", "\x00", "\x01", "\x1b", "\x7f", "\x85"])
texts = st.text(st.one_of(any_char, edge_char), max_size=20)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.one_of(any_char, edge_char), max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.one_of(
    st.sampled_from(["t1", "m1", "call-1", "", " ", "a" * 128, "a" * 129, "None"]),
    st.sampled_from(["m\ud800", "\udc00", "m\x00", "m\x01", "call\x1f", "m\x85"]),
    st.text(st.one_of(any_char, edge_char), max_size=12),
    scalars,
    st.lists(scalars, max_size=2),
)
huge = st.sampled_from(["x" * 70_000, "y" * 300_000])


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(value, json_values, ids)


agui_message = st.fixed_dictionaries(
    {},
    optional={
        "id": ids,
        "role": st.sampled_from(["user", "assistant", "tool", "system", "x"]) | json_values,
        "content": st.one_of(
            texts,
            st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": maybe(texts)})),
            json_values,
            huge,
        ),
        "toolCallId": ids,
        "toolCalls": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": ids,
                    "type": st.just("function"),
                    "function": st.fixed_dictionaries(
                        {}, optional={"name": ids, "arguments": maybe(huge)}
                    ),
                },
            ),
            max_size=2,
        )
        | json_values,
    },
)
agui_body = st.fixed_dictionaries(
    {},
    optional={
        "threadId": ids,
        "runId": ids,
        "state": maybe(huge),
        "messages": st.lists(maybe(agui_message), max_size=4) | json_values,
        "tools": st.lists(json_values, max_size=2) | json_values,
        "resume": st.lists(
            st.fixed_dictionaries(
                {}, optional={"interruptId": ids, "status": ids, "payload": json_values}
            ),
            max_size=2,
        )
        | json_values,
        "forwardedProps": json_values,
        "context": json_values,
    },
)
vercel_part = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["text", "tool-lookup", "dynamic-tool"]) | ids,
        "text": maybe(texts),
        "toolCallId": ids,
        "state": st.sampled_from(["output-available", "output-error", "approval-responded"]) | ids,
        "input": json_values,
        "output": maybe(huge),
        "approval": json_values,
    },
)
vercel_body = st.fixed_dictionaries(
    {},
    optional={
        "id": ids,
        "trigger": st.just("submit-message") | ids,
        "messages": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": ids,
                    "role": st.sampled_from(["user", "assistant"]) | ids,
                    "parts": st.lists(maybe(vercel_part), max_size=3) | json_values,
                },
            ),
            max_size=3,
        )
        | json_values,
    },
)
#: a string holding at least one character issue 34 was about
edge_texts = st.builds(lambda a, b, c: a + b + c, texts, edge_char, texts)

AGUI_TURN: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "state": {"draft": "v"},
    "messages": [
        {"id": "a0", "role": "assistant", "content": "earlier"},
        {"id": "m1", "role": "user", "content": [{"type": "text", "text": "hello"}]},
    ],
    "tools": [{"name": "page", "description": "reads", "parameters": {"type": "object"}}],
    "context": [{"description": "page", "value": "home"}],
    "forwardedProps": {"origin": "fuzz"},
}
VERCEL_TURN: dict[str, Any] = {
    "id": "t1",
    "trigger": "submit-message",
    "messages": [
        {
            "id": "m1",
            "role": "user",
            "metadata": {"k": "v"},
            "parts": [{"type": "text", "text": "hello"}],
        }
    ],
}


def _paths(body: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    children = body.items() if isinstance(body, dict) else enumerate(body)
    if isinstance(body, dict | list):
        for step, value in children:
            yield from _paths(value, (*at, step))


@st.composite
def spoiled(draw: st.DrawFn, template: dict[str, Any]) -> dict[str, Any]:
    """A valid body with an edge string put in one place: a value replaced or extended,
    or a key added (the fuzz seldom builds a valid turn by chance)."""
    body = copy.deepcopy(template)
    at = draw(st.sampled_from(list(_paths(body))))
    text = draw(edge_texts)
    target = body
    for step in at[:-1]:
        target = target[step]
    value = target[at[-1]] if at else body
    if isinstance(value, dict) and draw(st.booleans()):
        value[text] = "x"
    elif at:
        target[at[-1]] = value + text if isinstance(value, str) and draw(st.booleans()) else text
    return body


answers_body = st.dictionaries(ids.filter(lambda v: isinstance(v, str)), maybe(huge), max_size=3)
native_body = st.fixed_dictionaries({}, optional={"content": maybe(huge)})


@st.composite
def raw_bodies(draw: st.DrawFn, structured: st.SearchStrategy[Any]) -> bytes:
    """Most often a structured body; else deep nesting (up to 2,000 levels), a body
    that is not JSON, or JSON that is not an object."""
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        body = draw(structured)
        if kind == 5 and isinstance(body, dict):
            key = draw(st.sampled_from(["state", "messages", "content", "id", "x"]))
            body[key] = "@DEEP@"
            depth = draw(st.sampled_from([63, 64, 65, 100, 500, 999, 1000, 1001, 1500, 2000]))
            return json.dumps(body).replace('"@DEEP@"', nested(depth)).encode()
        return json.dumps(body).encode()
    if kind == 6:
        return nested(draw(st.integers(1, 2000))).encode()
    if kind == 7:
        return json.dumps(draw(json_values)).encode()
    if kind == 8:
        return draw(st.binary(max_size=40))
    return b'{"a": ' + b"{" * draw(st.integers(1, 2000))  # truncated deep object


@pytest.fixture(scope="module")
def app_client(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: Any
) -> Iterator[tuple[FlaskClient, redis.Redis]]:
    with (
        redis_databases.database("fuzz http") as url,
        http_app(tmp_path_factory.mktemp("fuzz"), url) as (_app, client, _store),
    ):
        broker = redis.Redis.from_url(url)
        # A thread of this user's for the routes that answer 404 before reading anything
        # else (pusher auth claims it, as a browser's subscription would).
        claim = {"socket_id": "1.1", "channel_name": f"private-thread-{KNOWN}"}
        assert client.post("/pusher/auth", data=claim).status_code == 200
        yield client, broker
        broker.close()


def _check(response: Any) -> None:
    status = response.status_code
    if response.mimetype == "text/event-stream":
        # Accepted and relayed: with no worker the stream would only wait for its
        # timeout, so it is closed unread (the job is on the queue).
        response.close()
        assert status == 200
        return
    text = response.get_data(as_text=True)
    response.close()
    assert status < 500, text[:500]


def _queued_jobs_are_text(broker: redis.Redis) -> None:
    """Every job on the queue (JSON, ASCII-escaped by Kombu) holds only text UTF-8 can
    encode: what the worker's first write to Redis or the database needs."""
    raw_jobs = cast(list[bytes], broker.lrange("celery", 0, -1))  # sync client
    for raw in raw_jobs:
        body = json.loads(base64.b64decode(json.loads(raw)["body"]))
        try:
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            pytest.fail(f"accepted a job the worker cannot store or publish: {exc}")


def _post(client: FlaskClient, broker: redis.Redis, path: str, body: bytes, **extra: Any) -> None:
    delivery = extra.pop("delivery", "relay")
    response = client.post(
        path,
        data=body,
        content_type="application/json",
        query_string={"delivery": delivery},
        **extra,
    )
    _check(response)
    _queued_jobs_are_text(broker)
    broker.delete("celery")  # no worker: what a valid request queued goes


#: a thread the fixture claims for this user
KNOWN = "t-known"

deliveries = st.sampled_from(["relay", "pusher", "mercure", "nope"])


@FUZZ
@given(body=raw_bodies(agui_body | spoiled(AGUI_TURN)), delivery=deliveries)
def test_agui(app_client: tuple[FlaskClient, redis.Redis], body: bytes, delivery: str) -> None:
    _post(*app_client, "/agui", body, delivery=delivery)


@FUZZ
@given(
    body=raw_bodies(agui_body | spoiled(AGUI_TURN)),
    agent=st.sampled_from(["default", "nope", "x" * 300]),
)
def test_agent(app_client: tuple[FlaskClient, redis.Redis], body: bytes, agent: str) -> None:
    _post(*app_client, f"/agent/{agent}", body)


@FUZZ
@given(body=raw_bodies(vercel_body | spoiled(VERCEL_TURN)), delivery=deliveries)
def test_vercel(app_client: tuple[FlaskClient, redis.Redis], body: bytes, delivery: str) -> None:
    _post(*app_client, "/api/chat", body, delivery=delivery)


threads = st.sampled_from(["t1", "t2", "x" * 129, "a%20b", "-bad", "a%00", "a%ED%A0%80"])


@FUZZ
@given(body=raw_bodies(native_body | spoiled({"content": "hi", "x": {"k": "v"}})), thread=threads)
def test_native_messages(
    app_client: tuple[FlaskClient, redis.Redis], body: bytes, thread: str
) -> None:
    _post(*app_client, f"/api/threads/{thread}/messages", body)


@FUZZ
@given(
    body=raw_bodies(answers_body),
    thread=threads,
    route=st.sampled_from(["tool-results", "approvals"]),
)
def test_native_answers(
    app_client: tuple[FlaskClient, redis.Redis], body: bytes, thread: str, route: str
) -> None:
    _post(*app_client, f"/api/threads/{thread}/{route}", body)


socket_ids = st.one_of(
    st.from_regex(r"\A[0-9]{1,12}\.[0-9]{1,12}\Z"),
    st.text(max_size=30),
    st.sampled_from(["", "1.2.3", "1.", ".1", "1" * 40 + ".1", "\u0661.\u0662", "1.2\n"]),
)
channels = st.one_of(
    st.builds(lambda t: f"private-thread-{t}", st.text(max_size=140)),
    st.builds(lambda t: f"private-encrypted-thread-{t}", st.text(max_size=20)),
    st.text(max_size=30),
)


@FUZZ
@given(form=st.fixed_dictionaries({}, optional={"socket_id": socket_ids, "channel_name": channels}))
def test_pusher_auth(app_client: tuple[FlaskClient, redis.Redis], form: dict[str, str]) -> None:
    client, _ = app_client
    _check(client.post("/pusher/auth", data=form))


@FUZZ
@given(thread=st.one_of(st.text(max_size=140), ids.filter(lambda v: isinstance(v, str))))
def test_mercure_token(app_client: tuple[FlaskClient, redis.Redis], thread: str) -> None:
    client, _ = app_client
    # As bytes a client may send: a lone surrogate as its three CESU-8 bytes (%ED%A0%80).
    raw = thread.encode("utf-8", "surrogatepass")
    _check(client.get("/mercure/token", query_string=f"threadId={quote(raw)}"))


stop_body = st.fixed_dictionaries(
    {}, optional={"activeStreamId": ids, "assistantMessage": json_values}
)


@FUZZ
@given(body=raw_bodies(stop_body))
def test_chat_stop(app_client: tuple[FlaskClient, redis.Redis], body: bytes) -> None:
    _post(*app_client, f"/api/chat/{KNOWN}/stop", body)


@FUZZ
@given(body=raw_bodies(agui_body | spoiled({**AGUI_TURN, "threadId": KNOWN})))
def test_agui_connect(app_client: tuple[FlaskClient, redis.Redis], body: bytes) -> None:
    _post(*app_client, "/agui/connect", body)


#: (route, query parameter) of every GET that reads one; the database sees some as they are
GET_PARAMS = [
    (f"/agui/threads/{KNOWN}", "before"),
    (f"/agui/threads/{KNOWN}", "limit"),
    ("/api/threads", "cursor"),
    ("/api/threads", "limit"),
    (f"/api/threads/{KNOWN}/stream", "after"),
    (f"/api/threads/{KNOWN}/segments/{'0' * 32}/envelopes", "after"),
]


@FUZZ
@given(
    where=st.sampled_from(GET_PARAMS),
    value=st.one_of(ids.filter(lambda v: isinstance(v, str)), texts),
)
def test_get_queries(
    app_client: tuple[FlaskClient, redis.Redis], where: tuple[str, str], value: str
) -> None:
    client, _ = app_client
    path, name = where
    raw = value.encode("utf-8", "surrogatepass")
    _check(client.get(path, query_string=f"{name}={quote(raw)}"))
