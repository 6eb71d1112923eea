"""PusherChannel with the real ``pusher`` SDK against a local stand-in for the Pusher
HTTP API (catalogue D 26-38): signing, batching, budgets, names and encryption."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import nacl.secret
import pusher
import pytest

from relayline.channels import (
    ChannelConfigError,
    ChannelLimitError,
    Consumer,
    Envelope,
    EnvelopeError,
)
from relayline.channels.errors import PublishError
from relayline.channels.pusher import (
    ENCRYPTED_EVENT_BUDGET,
    PusherChannel,
    pusher_client,
    thread_channel,
)
from relayline.shared.events import ProtocolEvent
from relayline.shared.settings import PusherSettings, Settings
from tests.support.channel_support import State
from tests.support.mercure_hub import Recorded, StandInServer

DONE = State("thread-42")
KEY = base64.b64encode(bytes(range(32))).decode()
SECRET = "app-secret"
#: 2-, 3- and 4-byte UTF-8, a slash and quotes: every escaping the SDK's JSON does
TEXT = 'Perugia è bella / "日本語" 😀 '


@pytest.fixture
def api() -> Iterator[StandInServer]:
    with StandInServer() as server:
        yield server


def client(api: StandInServer, **options: Any) -> Any:
    return pusher.Pusher(
        app_id="1001", key="app-key", secret=SECRET, host="127.0.0.1", port=api.port,
        ssl=False, **options,
    )  # fmt: skip


def batches(api: StandInServer) -> list[list[dict[str, str]]]:
    return [json.loads(r.body)["batch"] for r in api.requests]


def envelopes(api: StandInServer, channel: str = "private-thread-1") -> list[Envelope]:
    found = []
    for batch in batches(api):
        for item in batch:
            data = decrypt(channel, item["data"]) if "encrypted" in channel else item["data"]
            found.append(Envelope.parse(data))
    return found


def decrypt(channel: str, data: str) -> str:
    sealed = json.loads(data)
    secret = hashlib.sha256(channel.encode() + base64.b64decode(KEY)).digest()
    nonce, ciphertext = (base64.b64decode(sealed[k]) for k in ("nonce", "ciphertext"))
    return nacl.secret.SecretBox(secret).decrypt(ciphertext, nonce).decode()


def consume(found: list[Envelope]) -> list[tuple[str, Any]]:
    delivered: list[Envelope] = []
    consumer = Consumer(delivered.append)
    for envelope in found:
        consumer.feed(envelope.to_json())
    return [(e.type, e.data) for e in delivered]


def delta(text: str) -> ProtocolEvent:
    return ProtocolEvent("text-delta", {"id": "text_1", "delta": text})


def test_a_signed_batch_events_post_carries_each_envelope_as_item_data(  # D26
    api: StandInServer,
) -> None:
    channel = PusherChannel(client(api), "private-thread-1", batch_size=2)
    channel.send(delta(TEXT))
    channel.send(ProtocolEvent("tool-call", {"tool": {"name": "read"}}))
    [request] = api.requests
    assert (request.method, request.path) == ("POST", "/apps/1001/batch_events")
    assert_signed(request)
    items = json.loads(request.body)["batch"]
    assert [(i["channel"], i["name"]) for i in items] == [
        ("private-thread-1", "text-delta"),
        ("private-thread-1", "tool-call"),
    ]
    first = json.loads(items[0]["data"])
    assert first == {
        "streamId": channel.segment_id,
        "sequence": 0,
        "type": "text-delta",
        "data": {"id": "text_1", "delta": TEXT},
    }
    assert list(first) == ["streamId", "sequence", "type", "data"]


def assert_signed(request: Recorded) -> None:
    query = dict(request.query)
    signature = query.pop("auth_signature")
    assert query["auth_key"] == "app-key" and query["auth_version"] == "1.0"
    assert query["body_md5"] == hashlib.md5(request.body).hexdigest()
    signed = "\n".join(
        ["POST", request.path, "&".join(f"{k}={v}" for k, v in sorted(query.items()))]
    )
    expected = hmac.new(SECRET.encode(), signed.encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(signature, expected)


def test_the_default_batch_waits_for_ten_events_and_flushes_at_the_end(  # D27
    api: StandInServer,
) -> None:
    channel = PusherChannel(client(api), "private-thread-1")
    for n in range(11):
        channel.send(delta(str(n)))
    assert [len(b) for b in batches(api)] == [10]
    channel.completed(DONE, "thread-42")
    assert [len(b) for b in batches(api)] == [10, 1, 1]
    assert [e.sequence for e in envelopes(api)] == list(range(12))
    assert batches(api)[-1][0]["name"] == "stream.completed"


def test_requests_stay_within_the_byte_budget_and_escaping_fragments(api: StandInServer) -> None:
    # D28: the envelope is under 10,000 bytes, but the SDK's JSON escapes quotes and
    # non-ASCII, so the request would not be: the event is fragmented instead.
    channel = PusherChannel(client(api), "private-thread-1")
    text = TEXT * 200
    channel.send(delta(text))
    channel.send(delta("short"))
    channel.completed(DONE, "thread-42")
    assert len(Envelope(channel.segment_id, 0, "text-delta", {"delta": text}).to_json()) < 10_000
    assert all(len(r.body) <= 10_000 for r in api.requests)
    found = envelopes(api)
    assert sum(1 for e in found if e.type == "stream.fragment") > 1
    assert consume(found) == [
        ("text-delta", {"id": "text_1", "delta": text}),
        ("text-delta", {"id": "text_1", "delta": "short"}),
        ("stream.completed", {"workflowId": "thread-42"}),
    ]


def test_the_measured_size_is_the_sdk_request_body(api: StandInServer) -> None:
    for name in ("private-thread-1", "private-encrypted-thread-1"):
        api.requests.clear()
        channel = PusherChannel(client(api, encryption_master_key_base64=KEY), name)
        items = [channel.encode(t, json.dumps({"x": TEXT * n})) for n, t in enumerate("abc")]
        channel.deliver(channel.batch(items))
        [request] = api.requests
        assert channel.batch_bytes(items) == len(request.body)


def test_a_larger_request_budget_still_caps_event_data(api: StandInServer) -> None:  # D29
    channel = PusherChannel(client(api), "private-thread-1", max_request_bytes=100_000)
    channel.send(delta("x" * 25_000))
    channel.completed(DONE, "thread-42")
    items = [item for batch in batches(api) for item in batch]
    assert len(items) > 2
    assert all(len(item["data"].encode()) <= 10_000 for item in items)
    assert consume(envelopes(api))[0] == ("text-delta", {"id": "text_1", "delta": "x" * 25_000})


@pytest.mark.parametrize(
    ("channel", "options", "message"),
    [
        ("relayline:relay:1", {}, "Invalid Pusher channel name."),
        ("", {}, "Invalid Pusher channel name."),
        ("a b", {}, "Invalid Pusher channel name."),
        ("x" * 165, {}, "Invalid Pusher channel name."),
        ("private-thread-1", {"batch_size": 0}, "between 1 and 10"),
        ("private-thread-1", {"batch_size": 11}, "between 1 and 10"),
        ("private-thread-1", {"max_request_bytes": 13}, "must leave room for events"),
    ],
)
def test_invalid_configuration_is_refused(  # D31
    api: StandInServer, channel: str, options: dict[str, int], message: str
) -> None:
    with pytest.raises(ChannelConfigError, match=message):
        PusherChannel(client(api), channel, **options)
    assert PusherChannel(client(api), "x" * 164, batch_size=10, max_request_bytes=14)


@pytest.mark.parametrize("name", ["pusher:subscribe", "x" * 201, "é" * 101])
def test_invalid_event_names_are_refused(api: StandInServer, name: str) -> None:
    channel = PusherChannel(client(api), "private-thread-1", batch_size=1)
    with pytest.raises(EnvelopeError, match="1-200 bytes and cannot start with pusher:"):
        channel.send(ProtocolEvent(name, {}))
    channel.send(ProtocolEvent("x" * 200, {}))
    assert [e.type for e in envelopes(api)] == ["x" * 200]


def test_settings_name_the_thread_channel_and_configure_the_sdk(api: StandInServer) -> None:
    pusher = PusherSettings(
        app_id="1001", key="app-key", secret=SECRET, host="127.0.0.1", port=api.port
    )
    settings = Settings(pusher=pusher)
    channel = PusherChannel.from_settings(settings, "t9", batch_size=1)
    assert channel.channel == "private-thread-t9" and not channel.encrypted
    channel.send(delta("hi"))  # D33: host, port and scheme come from the settings
    [request] = api.requests
    assert_signed(request)
    encrypted = Settings(pusher=dataclasses.replace(pusher, encryption_master_key_base64=KEY))
    channel = PusherChannel.from_settings(encrypted, "t9")
    assert channel.channel == "private-encrypted-thread-t9" and channel.encrypted
    shared = pusher_client(encrypted)
    assert PusherChannel.from_settings(encrypted, "t9", client=shared).client is shared
    with pytest.raises(ChannelConfigError, match="Invalid thread id"):
        PusherChannel.from_settings(settings, "../other")
    with pytest.raises(ChannelConfigError, match="PUSHER_APP_ID"):
        PusherChannel.from_settings(Settings(), "t9")
    with pytest.raises(ChannelConfigError, match="Invalid Pusher settings"):
        PusherChannel.from_settings(
            Settings(pusher=dataclasses.replace(pusher, encryption_master_key_base64="c2hvcnQ=")),
            "t",
        )
    assert thread_channel("a.b_c-1", encrypted=True) == "private-encrypted-thread-a.b_c-1"


def test_encrypted_batches_decrypt_to_envelopes_with_unique_nonces(  # D34
    api: StandInServer,
) -> None:
    name = "private-encrypted-thread-1"
    channel = PusherChannel(client(api, encryption_master_key_base64=KEY), name, batch_size=3)
    for n in range(3):
        channel.send(delta(f"{TEXT}{n}"))
    channel.completed(DONE, "thread-42")
    items = [item for batch in batches(api) for item in batch]
    assert all(TEXT not in item["data"] and "streamId" not in item["data"] for item in items)
    nonces = [json.loads(item["data"])["nonce"] for item in items]
    assert len(set(nonces)) == len(nonces) == 4
    assert consume(envelopes(api, name)) == [
        *(("text-delta", {"id": "text_1", "delta": f"{TEXT}{n}"}) for n in range(3)),
        ("stream.completed", {"workflowId": "thread-42"}),
    ]


@pytest.mark.parametrize("budget", [1500, 10_000, 100_000])
def test_encrypted_fragments_respect_the_limits_and_reassemble(  # D35
    api: StandInServer, budget: int
) -> None:
    name = "private-encrypted-thread-1"
    channel = PusherChannel(
        client(api, encryption_master_key_base64=KEY), name, max_request_bytes=budget
    )
    text = TEXT * 400
    channel.send(delta(text))
    channel.completed(DONE, "thread-42")
    assert all(len(r.body) <= budget for r in api.requests)
    found = envelopes(api, name)
    assert all(len(e.to_json().encode()) <= ENCRYPTED_EVENT_BUDGET for e in found)
    assert sum(1 for e in found if e.type == "stream.fragment") > 1
    assert consume(found)[0] == ("text-delta", {"id": "text_1", "delta": text})


def test_an_encrypted_channel_without_a_master_key_is_refused(api: StandInServer) -> None:  # D36
    with pytest.raises(ChannelConfigError, match="no encryption master key"):
        PusherChannel(client(api), "private-encrypted-thread-1")
    assert api.requests == []


def test_a_tiny_encrypted_budget_cannot_fit_a_fragment(api: StandInServer) -> None:  # D37
    name = "private-encrypted-thread-1"
    channel = PusherChannel(
        client(api, encryption_master_key_base64=KEY), name, max_request_bytes=300
    )
    with pytest.raises(ChannelLimitError, match="fragment envelope"):
        channel.send(delta("hello"))
    assert api.requests == []
    # The same budget carries the whole event in plaintext: the overhead is encryption's.
    plain = PusherChannel(client(api), "private-thread-1", max_request_bytes=300, batch_size=1)
    plain.send(delta("hello"))
    assert [e.type for e in envelopes(api)] == ["text-delta"]


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ((503, {}, b"unavailable"), "Pusher batch delivery failed: 503"),
        ((200, {}, b'{"error":"The secret authentication failed","code":401}'), "refused"),
    ],
)
def test_after_a_refused_batch_data_stops_and_the_terminal_is_attempted(  # D38
    api: StandInServer, reply: tuple[int, dict[str, str], bytes], match: str
) -> None:
    name = "private-encrypted-thread-1"
    channel = PusherChannel(client(api, encryption_master_key_base64=KEY), name, batch_size=1)
    channel.send(delta("a"))
    api.replies.append(reply)
    with pytest.raises(PublishError, match=match):
        channel.send(delta("b"))
    channel.send(delta("c"))  # dropped: the segment stopped
    channel.completed(DONE, "thread-42")
    assert channel.stopped and len(api.requests) == 3
    assert [(e.sequence, e.type) for e in envelopes(api, name)] == [
        (0, "text-delta"),
        (1, "text-delta"),
        (2, "stream.completed"),
    ]
