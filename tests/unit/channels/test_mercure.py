"""MercureChannel against a local stand-in hub, with a fake clock for pacing
(catalogue E 39-56): form encoding, JWTs, byte budget, pacing, 429 and the 10 s bound."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from relayline.channels import (
    ChannelConfigError,
    Consumer,
    Envelope,
    MercureChannel,
    subscriber_token,
)
from relayline.channels.errors import PublishError
from relayline.channels.mercure import publisher_token, thread_topic
from relayline.shared.events import ProtocolEvent
from relayline.shared.settings import MercureSettings, Settings
from tests.support.channel_support import State
from tests.support.mercure_hub import StandInServer

DONE = State("thread-42")
KEY = "publisher-key-of-at-least-32-bytes!"
TOPIC = "http://127.0.0.1:8000/threads/thread-42"
TEXT = "Perugia è bella / ~ 😀 "
STOPPED = "Mercure streaming stopped: delivering within the hub limits would hold the run"


class Clock:
    """A fake monotonic clock; ``sleep`` advances it and records each wait."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.now += seconds


@pytest.fixture
def hub() -> Iterator[StandInServer]:
    with StandInServer() as server:
        yield server


@pytest.fixture
def clock() -> Clock:
    return Clock()


def channel(hub: StandInServer, clock: Clock, **options: Any) -> MercureChannel:
    return MercureChannel(hub.url, TOPIC, KEY, clock=clock, sleep=clock.sleep, **options)


def updates(hub: StandInServer) -> list[list[dict[str, Any]]]:
    """Each request's ``data`` field: one update, a JSON array of envelopes."""
    return [json.loads(dict(r.form())["data"]) for r in hub.requests]


def sequences(hub: StandInServer) -> list[list[int]]:
    return [[e["sequence"] for e in update] for update in updates(hub)]


def consume(hub: StandInServer) -> list[tuple[str, Any]]:
    delivered: list[Envelope] = []
    consumer = Consumer(delivered.append)
    for request in hub.requests:
        consumer.feed_batch(dict(request.form())["data"])
    return [(e.type, e.data) for e in delivered]


def delta(text: str = "a") -> ProtocolEvent:
    return ProtocolEvent("text-delta", {"id": "text_1", "delta": text})


def test_each_event_is_a_private_update_of_one_envelope(hub: StandInServer, clock: Clock) -> None:
    sender = channel(hub, clock)  # E39
    sender.send(delta(TEXT))
    [request] = hub.requests
    assert request.path == "/.well-known/mercure"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.headers["connection"] == "close"
    form = request.form()
    assert [name for name, _ in form] == ["topic", "data", "private"]
    assert dict(form)["topic"] == TOPIC and dict(form)["private"] == "on"
    assert json.loads(dict(form)["data"]) == [
        {
            "streamId": sender.segment_id,
            "sequence": 0,
            "type": "text-delta",
            "data": {"id": "text_1", "delta": TEXT},
        }
    ]
    scheme, token = request.headers["authorization"].split(" ")
    assert scheme == "Bearer"
    assert jwt.decode(token, KEY, ["HS256"]) == {"mercure": {"publish": [TOPIC]}}


def test_a_public_channel_sends_no_private_field(hub: StandInServer, clock: Clock) -> None:  # E40
    channel(hub, clock, private=False).send(delta())
    assert [name for name, _ in hub.requests[0].form()] == ["topic", "data"]


def test_a_closed_slot_packs_events_until_the_next_slot(hub: StandInServer, clock: Clock) -> None:
    sender = channel(hub, clock, max_requests_per_second=1)  # E41
    sender.send(delta("0"))
    clock.now += 0.2
    sender.send(delta("1"))
    sender.send(delta("2"))
    assert sequences(hub) == [[0]] and clock.waits == []
    clock.now += 0.9  # the slot is open again: everything pending leaves with this event
    sender.send(delta("3"))
    assert sequences(hub) == [[0], [1, 2, 3]] and clock.waits == []


def test_the_segment_end_waits_for_the_slot_and_the_terminal_has_its_own_update(  # E42
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock, max_requests_per_second=2)
    sender.send(delta("0"))
    sender.send(delta("1"))
    sender.completed(DONE, "thread-42")
    assert sequences(hub) == [[0], [1], [2]]
    assert clock.waits == [0.5, 0.5]
    assert updates(hub)[-1][0]["type"] == "stream.completed"


def test_a_full_request_waits_for_the_next_slot(hub: StandInServer, clock: Clock) -> None:  # E43
    sender = channel(hub, clock, max_requests_per_second=1, max_request_bytes=600)
    sender.send(delta("0"))
    for n in range(1, 6):
        sender.send(delta(str(n) * 40))
    # Each update would pass 600 bytes with one more event: it leaves when the slot opens.
    assert sequences(hub) == [[0], [1, 2], [3, 4]] and clock.waits == [1.0, 1.0]
    assert all(len(r.body) <= 600 for r in hub.requests)


def test_a_large_event_fragments_one_per_request_then_the_terminal(  # E44
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock, max_request_bytes=15_000)
    text = TEXT * 1000
    sender.send(delta(text))
    sender.completed(DONE, "thread-42")
    assert all(len(r.body) <= 15_000 for r in hub.requests)
    assert all(len(update) == 1 for update in updates(hub))
    assert [u[0]["type"] for u in updates(hub)][-1] == "stream.completed"
    assert len(hub.requests) > 3
    assert consume(hub) == [
        ("text-delta", {"id": "text_1", "delta": text}),
        ("stream.completed", {"workflowId": "thread-42"}),
    ]


def test_the_limit_is_measured_on_the_encoded_request(hub: StandInServer, clock: Clock) -> None:
    event = delta(TEXT * 3)  # E45: multibyte, "/" and "~" each encode differently
    probe = channel(hub, clock)
    probe.send(event)
    exact = len(hub.requests[0].body)
    assert probe.batch_bytes([dict(hub.requests[0].form())["data"][1:-1]]) == exact
    hub.requests.clear()
    channel(hub, clock, max_request_bytes=exact).send(event)
    assert [u[0]["type"] for u in updates(hub)] == ["text-delta"]
    hub.requests.clear()
    channel(hub, clock, max_request_bytes=exact - 1).send(event)
    assert {u[0]["type"] for u in updates(hub)} == {"stream.fragment"}
    assert all(len(r.body) <= exact - 1 for r in hub.requests)


def test_fragments_fit_for_every_payload_length(hub: StandInServer, clock: Clock) -> None:  # E46
    for length in range(4000, 4061):
        hub.requests.clear()
        sender = channel(hub, clock, max_request_bytes=2000)
        text = ("è~/" * length)[:length]
        sender.send(delta(text))
        assert all(len(r.body) <= 2000 for r in hub.requests)
        assert consume(hub) == [("text-delta", {"id": "text_1", "delta": text})]


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [("2", 2.0), ("0.25", 0.25), (None, 1.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 1.0)],
)
def test_a_429_is_retried_after_its_retry_after(  # E47, E48
    hub: StandInServer, clock: Clock, retry_after: str | None, wait: float
) -> None:
    headers = {"Retry-After": retry_after} if retry_after else {}
    hub.replies.append((429, headers, b"slow down"))
    sender = channel(hub, clock)
    sender.send(delta())
    assert clock.waits == [wait] and len(hub.requests) == 2
    assert hub.requests[0].body == hub.requests[1].body and not sender.errors


def test_a_refused_paced_channel_keeps_packing_until_the_hub_accepts(  # E49
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock, max_requests_per_second=1)
    sender.send(delta("0"))
    hub.replies.append((429, {"Retry-After": "3"}, b""))
    clock.now += 1
    sender.send(delta("1"))  # refused, retried after 3 s
    sender.send(delta("2"))  # the slot is closed again: packs
    sender.send(delta("3"))
    sender.completed(DONE, "thread-42")
    assert sequences(hub) == [[0], [1], [1], [2, 3], [4]]
    assert clock.waits == [3.0, 1.0, 1.0]


def test_another_hub_failure_stops_the_stream_without_retry(  # E50
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock)
    hub.replies.append((401, {}, b"Unauthorized"))
    with pytest.raises(PublishError, match="HTTP 401") as refused:
        sender.send(delta("0"))
    assert not refused.value.retryable
    sender.send(delta("1"))  # dropped without taking a sequence
    sender.completed(DONE, "thread-42")
    assert sequences(hub) == [[0], [1]] and clock.waits == []
    assert updates(hub)[1][0]["type"] == "stream.completed"


def test_an_unreachable_hub_is_a_publish_error(clock: Clock) -> None:
    with StandInServer() as gone:
        url = gone.url
    sender = MercureChannel(url, TOPIC, KEY, clock=clock, sleep=clock.sleep, timeout=2)
    with pytest.raises(PublishError, match="could not be reached"):
        sender.send(delta())


def test_a_hub_that_keeps_refusing_is_given_up_after_ten_seconds(  # E51
    hub: StandInServer, clock: Clock
) -> None:
    hub.replies.extend([(429, {"Retry-After": "1"}, b"")] * 20)
    sender = channel(hub, clock)
    with pytest.raises(PublishError, match=STOPPED):
        sender.send(delta())
    assert clock.waits == [1.0] * 10 and len(hub.requests) == 11
    # The terminal is attempted, but waiting for the hub again would pass the bound.
    with pytest.raises(PublishError, match=STOPPED):
        sender.completed(DONE, "thread-42")
    assert len(hub.requests) == 11


def test_a_single_wait_over_ten_seconds_is_refused_without_waiting(  # E52
    hub: StandInServer, clock: Clock
) -> None:
    hub.replies.append((429, {"Retry-After": "11"}, b""))
    with pytest.raises(PublishError, match=STOPPED):
        channel(hub, clock).send(delta())
    assert clock.waits == [] and len(hub.requests) == 1


def test_an_event_that_would_hold_the_run_too_long_is_given_up(  # E53
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock, max_requests_per_second=0.4, max_request_bytes=600)
    sender.send(delta("0"))
    with pytest.raises(PublishError, match=STOPPED):
        for n in range(1, 10):  # each event fills an update: every one waits 2.5 s
            sender.send(delta(str(n) * 150))
    assert clock.waits == [2.5] * 4


def test_time_spent_working_pays_back_waiting(hub: StandInServer, clock: Clock) -> None:  # E54
    sender = channel(hub, clock, max_requests_per_second=0.4, max_request_bytes=600)
    sender.send(delta("0"))
    for n in range(1, 10):
        sender.send(delta(str(n) * 150))
        clock.now += 2.0  # the run works between events
    sender.completed(DONE, "thread-42")
    assert not sender.errors and len(hub.requests) == 11


def test_a_rate_below_three_requests_in_ten_seconds_is_refused(hub: StandInServer) -> None:
    with pytest.raises(ChannelConfigError, match="three requests every 10 seconds"):  # E55
        MercureChannel(hub.url, TOPIC, KEY, max_requests_per_second=0.29)


def test_the_slowest_rate_still_ends_a_segment_in_three_requests(  # E56
    hub: StandInServer, clock: Clock
) -> None:
    sender = channel(hub, clock, max_requests_per_second=0.3, max_request_bytes=700)
    sender.send(delta("0"))
    sender.send(delta("1"))  # packs: the slot is closed
    sender.completed(DONE, "thread-" + "x" * 500)  # a terminal in two fragments
    assert not sender.errors
    assert [len(u) for u in updates(hub)] == [1, 1, 1, 1]
    assert sum(clock.waits) == pytest.approx(10.0)


def test_tokens_and_the_thread_topic() -> None:
    token = subscriber_token("subscriber-key-of-at-least-32-bytes", TOPIC, 60)
    claims = jwt.decode(token, "subscriber-key-of-at-least-32-bytes", ["HS256"])
    assert claims["mercure"] == {"subscribe": [TOPIC]}
    assert time.time() + 50 < claims["exp"] <= time.time() + 61
    with pytest.raises(ChannelConfigError):
        subscriber_token("k", TOPIC, 0)
    assert jwt.decode(publisher_token(KEY), KEY, ["HS256"]) == {"mercure": {"publish": ["*"]}}
    assert thread_topic("https://app.example/", "a.b_c-1") == "https://app.example/threads/a.b_c-1"
    with pytest.raises(ChannelConfigError, match="Invalid thread id"):
        thread_topic("https://app.example", "a/b")


def test_settings_build_the_thread_channel(hub: StandInServer) -> None:
    settings = Settings(
        public_url="https://app.example",
        mercure=MercureSettings(hub_url=hub.url, publisher_jwt_key=KEY, subscriber_jwt_key=KEY),
    )
    sender = MercureChannel.from_settings(settings, "t9", max_requests_per_second=5)
    assert (sender.hub_url, sender.topic, sender.private) == (
        hub.url,
        "https://app.example/threads/t9",
        True,
    )
    sender.send(delta())
    assert dict(hub.requests[0].form())["topic"] == urllib.parse.unquote(sender.topic)
    with pytest.raises(ChannelConfigError, match="MERCURE_HUB_URL"):
        MercureChannel.from_settings(Settings(), "t9")
    # Updates are private: without the subscriber key nobody could read them.
    publish_only = MercureSettings(hub_url=hub.url, publisher_jwt_key=KEY)
    with pytest.raises(ChannelConfigError, match="MERCURE_SUBSCRIBER_JWT_KEY"):
        MercureChannel.from_settings(Settings(mercure=publish_only), "t9")


def test_unicode_line_breaks_are_escaped_so_no_hub_can_split_an_envelope(
    hub: StandInServer, clock: Clock
) -> None:
    text = "one\u2028two\u2029three\x85four"
    channel(hub, clock).send(delta(text))
    [request] = hub.requests
    data = dict(request.form())["data"]
    assert data.splitlines() == [data]  # nothing str.splitlines (or a hub) breaks on
    assert "\\u2028" in data and "\\u2029" in data and "\\u0085" in data
    assert consume(hub) == [("text-delta", {"id": "text_1", "delta": text})]
