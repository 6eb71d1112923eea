"""The worker's Redis transport (worker.intake) on a real Redis: the messages waiting in
a queue come in one read, within the consumer's prefetch credit, each recorded as
unacked exactly as kombu records it (so kombu acknowledges and restores them), and an
envelope it cannot read is left where it was for the BRPOP path (which dead-letters it:
tests/integration/test_unrunnable_messages.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis
from kombu import Connection, Consumer, Exchange, Message, Producer, Queue

from relayline.worker.intake import BATCH, Transport


@pytest.fixture
def queue() -> Queue:
    name = f"intake-{uuid.uuid4().hex[:8]}"
    return Queue(name, Exchange(name, type="direct"), routing_key=name)


@pytest.fixture
def connection(redis_url: str) -> Iterator[Connection]:
    with Connection(redis_url, transport=Transport) as conn:
        yield conn


def publish(redis_url: str, queue: Queue, count: int) -> None:
    with Connection(redis_url) as conn:  # kombu's own transport publishes, as the web does
        producer = Producer(conn.default_channel)
        for index in range(count):
            producer.publish({"n": index}, exchange=queue.exchange, routing_key=queue.name,
                             declare=[queue], serializer="json")  # fmt: skip


def take_once(connection: Connection, queue: Queue, prefetch: int) -> list[Message]:
    """Consume ``queue`` with ``prefetch`` credit and drain the connection once: what one
    read delivered (kombu's own transport delivers one message per read)."""
    received: list[Message] = []
    consumer = Consumer(
        connection.default_channel, [queue], callbacks=[lambda _b, m: received.append(m)]
    )
    consumer.qos(prefetch_count=prefetch)
    consumer.consume()
    connection.drain_events(timeout=5)
    return received


def test_waiting_messages_come_in_one_read_recorded_as_kombu_records_them(
    redis_url: str, queue: Queue, connection: Connection
) -> None:
    publish(redis_url, queue, 10)
    received = take_once(connection, queue, prefetch=100)
    assert sorted(m.payload["n"] for m in received) == list(range(10))
    client = redis.Redis.from_url(redis_url)
    assert client.llen(queue.name) == 0
    stored = cast(dict[bytes, bytes], client.hgetall("unacked"))
    assert len(stored) == 10 and client.zcard("unacked_index") == 10
    for message in received:
        raw, exchange, routing_key = json.loads(stored[str(message.delivery_tag).encode()])
        # the envelope, as kombu's QoS.append stores it
        assert raw == message._raw  # type: ignore[attr-defined]
        assert (exchange, routing_key) == (queue.exchange.name, queue.name)
    for message in received:
        message.ack()
    assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0


def test_the_prefetch_credit_bounds_what_is_taken(
    redis_url: str, queue: Queue, connection: Connection
) -> None:
    publish(redis_url, queue, 10)
    received = take_once(connection, queue, prefetch=3)
    assert [m.payload["n"] for m in received] == [0, 1, 2]  # in publish order
    assert redis.Redis.from_url(redis_url).llen(queue.name) == 7
    assert BATCH >= 3


def test_taken_messages_are_restored_by_kombu_when_never_acknowledged(
    redis_url: str, queue: Queue, connection: Connection
) -> None:
    # A worker that took them and died: kombu's visibility timeout brings them back.
    publish(redis_url, queue, 5)
    received = take_once(connection, queue, prefetch=100)
    assert len(received) == 5
    with Connection(redis_url, transport_options={"visibility_timeout": 0}) as other:
        channel: Any = other.default_channel  # kombu's stubs lack the Redis QoS
        channel.qos.restore_visible()
    client = redis.Redis.from_url(redis_url)
    assert client.llen(queue.name) == 5 and client.hlen("unacked") == 0
    restored = sorted(
        json.loads(item)["headers"]["redelivered"]
        for item in cast(list[bytes], client.lrange(queue.name, 0, -1))
    )
    assert restored == [True] * 5


def test_an_unreadable_envelope_is_left_for_kombu_in_its_place(
    redis_url: str, queue: Queue, connection: Connection
) -> None:
    client = redis.Redis.from_url(redis_url)
    publish(redis_url, queue, 1)
    client.lpush(queue.name, b"not json")
    publish(redis_url, queue, 1)  # queue, oldest first: message 0, the garbage, message 0'
    received = take_once(connection, queue, prefetch=100)
    assert len(received) == 1  # the one BRPOP took; the batch stopped at the garbage
    assert cast(bytes, client.lindex(queue.name, -1)) == b"not json"  # next in line, nothing lost
    assert client.llen(queue.name) == 2
    assert client.hlen("unacked") == 1


def test_its_commands_share_one_kept_client_and_still_acknowledge(
    redis_url: str, queue: Queue, connection: Connection
) -> None:
    """kombu builds a ``redis.Redis`` per acknowledgement and per unacked record (about
    as costly as the command); the channel keeps one (shared.redis_channel)."""
    publish(redis_url, queue, 3)
    received = take_once(connection, queue, prefetch=100)
    channel: Any = connection.default_channel
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second
    for message in received:
        message.ack()
    client = redis.Redis.from_url(redis_url)
    assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0
