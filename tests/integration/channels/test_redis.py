"""RedisChannel and RedisChannelReader against a real Redis (catalogue B, C), plus the
shared channel behaviour suite."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from relayline.channels import AbstractChannel, ChannelConfigError, PublishError, RedisChannel
from relayline.shared.events import ProtocolEvent
from tests.support.channel_behaviour import ChannelBehaviour
from tests.support.channel_redis import FlakyRedis, RedisSubscription, flaky
from tests.support.channel_support import State

pytestmark = pytest.mark.integration

DONE = State("thread-42")


class TestRedisBehaviour(ChannelBehaviour):
    @pytest.fixture(autouse=True)
    def _redis(self, redis_url: str) -> Iterator[None]:
        self.redis_url = redis_url
        self.client = redis.Redis.from_url(redis_url)
        yield
        self.client.close()

    def make_channel(
        self, name: str, *, fragmenting: bool = False, fail_delivery: int | None = None
    ) -> AbstractChannel:
        client = flaky(self.redis_url)
        client.fail_on = fail_delivery
        return RedisChannel(client, name, max_message_bytes=700 if fragmenting else None)

    def subscribe(self, name: str) -> RedisSubscription:
        return RedisSubscription(self.client, name)


# RedisChannel (catalogue B) -----------------------------------------------------------


def test_publishes_one_envelope_per_message_on_the_channel(client: FlakyRedis, name: str) -> None:
    subscription = RedisSubscription(client, name)
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text-delta", {"id": "t", "delta": "Ciao è / 😀"}))
    channel.completed(DONE, "thread-42")
    raw = subscription.take(2)
    subscription.close()
    assert [json.loads(r) for r in raw] == [
        {
            "streamId": channel.stream_id,
            "sequence": 0,
            "type": "text-delta",
            "data": {"id": "t", "delta": "Ciao è / 😀"},
        },
        {
            "streamId": channel.stream_id,
            "sequence": 1,
            "type": "stream.completed",
            "data": {"workflowId": "thread-42"},
        },
    ]
    assert raw[0].startswith(f'{{"streamId":"{channel.stream_id}","sequence":0,'.encode())


def test_invalid_utf8_becomes_the_replacement_character(client: FlakyRedis, name: str) -> None:
    subscription = RedisSubscription(client, name)
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "a\udcffb"}))
    [raw] = subscription.take(1)
    subscription.close()
    assert '"content":"a\ufffdb"'.encode() in raw


def test_no_subscriber_is_success(client: FlakyRedis, name: str) -> None:
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "into the void"}))
    channel.completed(DONE, "thread-42")
    assert client.publishes == 2 and not channel.errors and not channel.stopped


@pytest.mark.parametrize("reply", [False, None])
def test_a_failed_publish_stops_data_but_the_terminal_goes_out(
    client: FlakyRedis, name: str, reply: Any
) -> None:
    client.fail_on, client.reply = 2, reply
    subscription = RedisSubscription(client, name)
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "a"}))
    with pytest.raises(PublishError, match="Redis streaming publish failed"):
        channel.send(ProtocolEvent("text", {"content": "b"}))
    channel.send(ProtocolEvent("text", {"content": "c"}))
    channel.completed(DONE, "thread-42")
    frames = [json.loads(r) for r in subscription.take(2)]
    client.publish(name, "sentinel")
    assert subscription.take(1) == [b"sentinel"]  # and nothing else was published
    subscription.close()
    assert [(f["sequence"], f["type"]) for f in frames] == [(0, "text"), (2, "stream.completed")]


def test_pipelines_and_transactions_are_refused(client: FlakyRedis, name: str) -> None:
    subscription = RedisSubscription(client, name)
    for pipeline in (client.pipeline(transaction=True), client.pipeline(transaction=False)):
        channel = RedisChannel(pipeline, name)
        with pytest.raises(PublishError, match="cannot run inside a transaction or pipeline"):
            channel.send(ProtocolEvent("text", {"content": "a"}))
        assert pipeline.command_stack == []
    client.publish(name, "sentinel")
    assert subscription.take(1) == [b"sentinel"]  # nothing was published before it
    subscription.close()


def test_the_first_delivery_awaits_a_listener(client: FlakyRedis, name: str) -> None:
    client.numsub_called = threading.Event()
    channel = RedisChannel(client, name, await_listener=10)
    publisher = threading.Thread(
        target=lambda: channel.send(ProtocolEvent("text", {"content": "first"}))
    )
    publisher.start()
    assert client.numsub_called.wait(5)  # the publisher is polling NUMSUB, not publishing
    subscription = RedisSubscription(client, name)
    publisher.join(10)
    [first] = subscription.take(1)
    subscription.close()
    assert not channel.errors and json.loads(first)["sequence"] == 0


def test_without_a_listener_the_wait_ends_and_the_message_is_published(
    client: FlakyRedis, name: str
) -> None:
    channel = RedisChannel(client, name, await_listener=0.2)  # a bounded wait, by design
    channel.send(ProtocolEvent("text", {"content": "to nobody"}))
    assert client.publishes == 1 and not channel.errors


def test_counting_subscribers_can_fail(client: FlakyRedis, name: str) -> None:
    client.numsub_error = redis.ConnectionError("gone")
    channel = RedisChannel(client, name, await_listener=1)
    with pytest.raises(PublishError, match="could not count subscribers: gone"):
        channel.send(ProtocolEvent("text", {"content": "a"}))
    with pytest.raises(ChannelConfigError):
        RedisChannel(client, name, await_listener=-1)
