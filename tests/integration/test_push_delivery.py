"""Push delivery end to end (docs/DESIGN.md section 3, "Push delivery"; section 5).

The real pipeline (a Celery worker process and the web app, SQLite, Redis) runs the test
agent with its output pushed through a real soketi or a real Mercure hub. Subscribers
are what browsers use, authorized by our own endpoints: pusher-js with
``channelAuthorization`` at ``/pusher/auth`` (decrypting ``private-encrypted-*``
itself), and an SSE client holding the token of ``GET /mercure/token``. Everything they
receive goes through the Python ``Consumer``; the reassembled events must equal what
relay delivery streams for the same turn. Subscribing always comes first: push keeps
nothing for late listeners.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
import requests
from ag_ui_validate.pytest_plugin import assert_valid_agui

from relayline.channels import Envelope, active_segment
from relayline.channels.stream.log import entries
from relayline.shared.auth import mint_token
from tests.support.mercure_hub import MercureHub
from tests.support.mercure_sse import publish
from tests.support.push_stack import (
    PUBLIC_URL,
    MercureListener,
    PusherListener,
    PushStack,
    new_thread,
    protocol_events,
    push_stack,
    shape,
    text,
)
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import Soketi

pytestmark = pytest.mark.integration

MASTER_KEY = base64.b64encode(os.urandom(32)).decode()
SECRET = "push-delivery-secret-of-32-characters"
RUN_ID = re.compile(r"run_[0-9a-f]{32}")
#: the text events of each protocol
TEXT = {"native": ("text",), "agui": ("TEXT_MESSAGE_CONTENT",), "vercel": ("text-delta",)}


# ---------------------------------------------------------------------------------------
# Stacks (soketi and the Mercure hub are the session's, from tests/conftest.py)
#
# Each test class has a stack of its own (class-scoped fixtures), started when the class
# begins and stopped when it ends, on a Redis database it holds meanwhile: no worker
# takes another stack's tasks from the broker.
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="class")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    soketi: Soketi,
    hub: MercureHub,
) -> Iterator[PushStack]:
    """Pusher (``private-thread-<id>``) and Mercure, no authentication."""
    folder = tmp_path_factory.mktemp("push-plain")
    with push_stack(folder, redis_databases, soketi=soketi, hub=hub) as running:
        yield running


@pytest.fixture(scope="class")
def encrypted_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases, soketi: Soketi
) -> Iterator[PushStack]:
    """Pusher with a master key (``private-encrypted-thread-<id>``), no Mercure."""
    folder = tmp_path_factory.mktemp("push-encrypted")
    with push_stack(folder, redis_databases, soketi=soketi, master_key=MASTER_KEY) as running:
        yield running


@pytest.fixture(scope="class")
def token_stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    soketi: Soketi,
    hub: MercureHub,
) -> Iterator[PushStack]:
    """Pusher and Mercure with ``RELAYLINE_AUTH=token``."""
    folder = tmp_path_factory.mktemp("push-token")
    with push_stack(
        folder,
        redis_databases,
        soketi=soketi,
        hub=hub,
        RELAYLINE_AUTH="token",
        SECRET_KEY=SECRET,
    ) as running:
        yield running


@pytest.fixture(scope="class")
def bare_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[PushStack]:
    """Neither Pusher nor Mercure configured: relay is all this server can do."""
    folder = tmp_path_factory.mktemp("push-bare")
    with push_stack(folder, redis_databases) as running:
        yield running


# ---------------------------------------------------------------------------------------
# Requests of each protocol
# ---------------------------------------------------------------------------------------


def user_turn(protocol: str, thread: str, words: str) -> tuple[str, dict[str, Any]]:
    """A new turn saying ``words``: the path and body a client of ``protocol`` sends."""
    if protocol == "native":
        return f"/api/threads/{thread}/messages", {"content": words}
    if protocol == "agui":
        return "/agui", agui_body(thread, "client-run-1", [agui_user(words)])
    return "/api/chat", {
        "id": thread,
        "trigger": "submit-message",
        "messages": [{"id": "u-1", "role": "user", "parts": [{"type": "text", "text": words}]}],
    }


def tool_answer(protocol: str, thread: str, words: str, result: str) -> tuple[str, Any]:
    """The continuation that answers the frontend call ``call_t`` with ``result``."""
    if protocol == "native":
        return f"/api/threads/{thread}/tool-results", {"call_t": {"result": result}}
    answer = {"id": "t-1", "role": "tool", "toolCallId": "call_t", "content": result}
    return "/agui", agui_body(thread, "client-run-2", [agui_user(words), answer])


def agui_user(words: str) -> dict[str, str]:
    return {"id": "u-1", "role": "user", "content": words}


def agui_body(thread: str, run: str, messages: list[Any]) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def listen(stack: PushStack, delivery: str, thread: str) -> PusherListener | MercureListener:
    if delivery == "pusher":
        return stack.pusher_listener(thread)
    return stack.mercure_listener(thread)


def where(
    stack: PushStack, delivery: str, thread: str, run_id: str, segment_id: str
) -> dict[str, Any]:
    """The 202 body of docs/DESIGN.md section 3: where the thread's output is pushed, and
    the segment (stream id) it goes out as."""
    body = {
        "threadId": thread,
        "delivery": delivery,
        "runId": run_id,
        "streamId": segment_id,
        "envelopesUrl": f"/api/threads/{thread}/segments/{segment_id}/envelopes",
    }
    if delivery == "pusher":
        assert stack.soketi is not None
        return body | {
            "channel": f"private-thread-{thread}",
            "key": stack.soketi.key,
            "authEndpoint": "/pusher/auth",
        }
    assert stack.hub is not None
    return body | {
        "hubUrl": stack.hub.url,
        "topic": f"{PUBLIC_URL}/threads/{thread}",
        "tokenEndpoint": f"/mercure/token?threadId={thread}",
    }


def check_protocol(protocol: str, events: list[dict[str, Any]]) -> None:
    if protocol == "agui":
        assert_valid_agui(events)
    if protocol == "native":  # a pushed native segment ends as a relayed one: with done
        assert events[-1]["type"] == "done" and [e["type"] for e in events].count("done") == 1


# ---------------------------------------------------------------------------------------
# Pusher and Mercure carry exactly what the relay carries
# ---------------------------------------------------------------------------------------


class TestPusherAndMercure:
    """Pusher (``private-thread-<id>``) and Mercure on one stack, no authentication."""

    @pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
    @pytest.mark.parametrize("delivery", ["pusher", "mercure"])
    def test_a_pushed_turn_is_the_relayed_turn(
        self, stack: PushStack, delivery: str, protocol: str
    ) -> None:
        thread = new_thread(f"{delivery}-{protocol}")
        with listen(stack, delivery, thread) as listener:
            answer = stack.push(*user_turn(protocol, thread, "hello"), delivery)
            segment = listener.segment()

        assert RUN_ID.fullmatch(answer["runId"]), answer
        assert answer == where(stack, delivery, thread, answer["runId"], answer["streamId"])
        run = stack.get(f"/api/threads/{thread}").json()["run"]
        assert run["runId"] == answer["runId"] and run["status"] == "completed"
        # Every delivery writes the segment's log: the very envelopes pushed, terminal too.
        assert {e.segment_id for e in segment} == {answer["streamId"]}
        redis_client = stack.web.app.extensions["relayline"].redis
        assert [Envelope.parse(e) for e in entries(redis_client, answer["streamId"])] == segment
        assert active_segment(redis_client, thread) is None  # the terminal released it

        assert segment[-1].type == "stream.completed"
        assert segment[-1].data == {"workflowId": thread}
        pushed = protocol_events(segment)
        check_protocol(protocol, pushed)
        assert text(pushed, *TEXT[protocol]) == "Hello! hello"
        if protocol == "native":
            assert pushed[-1] == {"type": "done", "status": "completed", "runId": run["runId"]}

        relayed = stack.relay(*user_turn(protocol, new_thread(f"relay-{protocol}"), "hello"))
        assert shape(pushed) == shape(relayed)

    @pytest.mark.parametrize("protocol", ["native", "agui"])
    @pytest.mark.parametrize("delivery", ["pusher", "mercure"])
    def test_a_pushed_frontend_tool_round_trip_is_the_relayed_one(
        self, stack: PushStack, delivery: str, protocol: str
    ) -> None:
        words = "What is the title?"
        thread = new_thread(f"{delivery}-{protocol}-tool")
        with listen(stack, delivery, thread) as listener:
            asked = stack.push(*user_turn(protocol, thread, words), delivery)
            suspended = listener.segment()
            answered = stack.push(*tool_answer(protocol, thread, words, "Page"), delivery)
            finished = listener.segment()

        # One durable run, two segments: each with its own stream id and sequence from 0.
        assert answered == where(stack, delivery, thread, asked["runId"], answered["streamId"])
        assert suspended[-1].type == "stream.interrupted"
        assert finished[-1].type == "stream.completed"
        assert suspended[0].segment_id == asked["streamId"] != answered["streamId"]
        assert finished[0].segment_id == answered["streamId"]
        assert finished[0].sequence == 0

        first, second = protocol_events(suspended), protocol_events(finished)
        check_protocol(protocol, first)
        check_protocol(protocol, second)
        if protocol == "native":
            interrupt, done = first[-2:]
            assert interrupt["type"] == "interrupt"
            assert done == {"type": "done", "status": "interrupted", "runId": asked["runId"]}
            assert [c["name"] for c in interrupt["request"]["toolCalls"]] == ["read_title"]
        else:  # live, a frontend call is a plain handoff: the tool call, then RUN_FINISHED
            calls = [e["toolCallName"] for e in first if e["type"] == "TOOL_CALL_START"]
            assert calls == ["read_title"]
            assert first[-1] == {
                "type": "RUN_FINISHED",
                "threadId": thread,
                "runId": "client-run-1",
            }
        assert text(second, *TEXT[protocol]) == "The title is Page."

        other = new_thread(f"relay-{protocol}-tool")
        assert shape(first) == shape(stack.relay(*user_turn(protocol, other, words)))
        assert shape(second) == shape(stack.relay(*tool_answer(protocol, other, words, "Page")))

    def test_a_mercure_token_opens_its_own_thread_only(self, stack: PushStack) -> None:
        assert stack.hub is not None
        thread, other = new_thread("mine"), new_thread("other")
        topic = f"{PUBLIC_URL}/threads/{thread}"
        grant = stack.get("/mercure/token", threadId=thread).json()
        assert grant == {"token": grant["token"], "hubUrl": stack.hub.url, "topic": topic}
        claims = jwt.decode(grant["token"], stack.hub.subscriber_key, algorithms=["HS256"])
        assert claims["mercure"] == {"subscribe": [topic]}

        # Someone holding the token of another thread subscribes to this thread's topic: the
        # hub accepts the subscription but never dispatches the thread's private updates.
        foreign = stack.get("/mercure/token", threadId=other).json()["token"]
        with (
            stack.mercure_listener(thread) as reader,
            MercureListener(stack.hub, topic, foreign) as stranger,
        ):
            stack.push(f"/api/threads/{thread}/messages", {"content": "hello"}, "mercure")
            assert text(protocol_events(reader.segment()), "text") == "Hello! hello"
            publish(stack.hub, topic, "sentinel")  # public, dispatched after the private ones
            assert stranger.updates_until("sentinel") == []
            assert reader.updates_until("sentinel") == []


# ---------------------------------------------------------------------------------------
# End-to-end encryption
# ---------------------------------------------------------------------------------------


class TestEncryptedPusher:
    """A master key is set: the thread's channel is ``private-encrypted-thread-<id>``."""

    def test_an_encrypted_channel_is_decrypted_by_pusher_js(
        self, encrypted_stack: PushStack
    ) -> None:
        stack = encrypted_stack
        assert stack.soketi is not None
        words = "What is the title?"
        thread = new_thread("sealed")
        channel = f"private-encrypted-thread-{thread}"
        with stack.pusher_listener(thread, encrypted=True) as listener:
            asked = stack.push(*user_turn("native", thread, words), "pusher")
            suspended = listener.segment()
            stack.push(*tool_answer("native", thread, words, "Sealed page"), "pusher")
            finished = listener.segment()
        assert listener.logs == []  # pusher-js decrypted every event
        assert asked["channel"] == channel
        assert [suspended[-1].type, finished[-1].type] == ["stream.interrupted", "stream.completed"]
        assert text(protocol_events(finished), "text") == "The title is Sealed page."

        # Our endpoint hands the owner the channel's shared secret, and only for the channel
        # this server publishes to.
        form = {"socket_id": "1234.5678", "channel_name": channel}
        auth = requests.post(stack.url("/pusher/auth"), data=form, timeout=30)
        assert auth.status_code == 200
        expected = hashlib.sha256(channel.encode() + base64.b64decode(MASTER_KEY)).digest()
        assert base64.b64decode(auth.json()["shared_secret"]) == expected
        plain = {"socket_id": "1234.5678", "channel_name": f"private-thread-{thread}"}
        assert requests.post(stack.url("/pusher/auth"), data=plain, timeout=30).status_code == 400


# ---------------------------------------------------------------------------------------
# Authorization and configuration
# ---------------------------------------------------------------------------------------


def bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(SECRET, user)}"}


def pusher_auth(stack: PushStack, thread: str) -> requests.Response:
    form = {"socket_id": "1234.5678", "channel_name": f"private-thread-{thread}"}
    return requests.post(stack.url("/pusher/auth"), data=form, headers=stack.headers, timeout=30)


class TestAuthorization:
    """RELAYLINE_AUTH=token: a thread, and listening to it, belong to its creator."""

    def test_only_the_owner_may_listen_to_a_thread(self, token_stack: PushStack) -> None:
        assert token_stack.soketi is not None
        ann, bob = token_stack.as_user(bearer("ann")), token_stack.as_user(bearer("bob"))
        thread = new_thread("ann")

        # Ann listens first (claiming the new thread), then runs a turn she alone receives.
        with ann.mercure_listener(thread) as listener:
            ann.push(f"/api/threads/{thread}/messages", {"content": "hello"}, "mercure")
            assert text(protocol_events(listener.segment()), "text") == "Hello! hello"

        owner = pusher_auth(ann, thread)
        assert owner.status_code == 200
        signed = f"1234.5678:private-thread-{thread}".encode()
        signature = hmac.new(token_stack.soketi.secret.encode(), signed, hashlib.sha256).hexdigest()
        assert owner.json() == {"auth": f"{token_stack.soketi.key}:{signature}"}
        assert ann.get("/mercure/token", threadId=thread).status_code == 200

        missing = {"error": f"Thread '{thread}' was not found.", "type": "NotFound"}
        for refused in (
            pusher_auth(bob, thread),
            bob.get("/mercure/token", threadId=thread),
            bob.post(f"/api/threads/{thread}/messages", {"content": "hi"}, "pusher"),
        ):
            assert (refused.status_code, refused.json()) == (404, missing)
        assert pusher_auth(token_stack, thread).status_code == 401
        assert token_stack.get("/mercure/token", threadId=thread).status_code == 401

        # Listening claims a thread nobody has used yet: then it is Bob's, not Ann's.
        unused = new_thread("bob")
        assert pusher_auth(bob, unused).status_code == 200
        for refused in (
            ann.get("/mercure/token", threadId=unused),
            ann.post(f"/api/threads/{unused}/messages", {"content": "hi"}, "mercure"),
        ):
            assert refused.status_code == 404, refused.text


class TestMisconfiguredDelivery:
    """Neither Pusher nor Mercure is configured: push requests are refused up front."""

    @pytest.mark.parametrize(
        ("delivery", "error"),
        [
            pytest.param(
                "pusher", "Pusher delivery is not configured on this server.", id="pusher"
            ),
            pytest.param(
                "mercure", "Mercure delivery is not configured on this server.", id="mercure"
            ),
            pytest.param(
                "pigeon", "Unknown delivery 'pigeon'; use relay, pusher or mercure.", id="unknown"
            ),
        ],
    )
    def test_a_delivery_the_server_cannot_make_is_refused_before_anything_is_enqueued(
        self, bare_stack: PushStack, delivery: str, error: str
    ) -> None:
        thread = new_thread("bare")
        received = bare_stack.received_tasks()
        refused = bare_stack.post(f"/api/threads/{thread}/messages", {"content": "hello"}, delivery)
        assert refused.status_code == 400
        assert refused.json() == {"error": error, "type": "BadRequest"}
        # One worker takes tasks in order: once a relayed turn on the same thread is done,
        # anything the refused request had enqueued would have been received before it.
        relayed = bare_stack.relay(f"/api/threads/{thread}/messages", {"content": "hello"})
        assert text(relayed, "text") == "Hello! hello"
        assert bare_stack.received_tasks() == received + 1
        history = bare_stack.get(f"/api/chat/{thread}").json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert bare_stack.get("/mercure/token", threadId=thread).status_code == 404
        assert pusher_auth(bare_stack, thread).status_code == 404
