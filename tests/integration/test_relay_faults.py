"""A relayed stream whose transport breaks tells the client so, with a code it can act on
(resume or reload), never "The run failed.": the run itself may still complete."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import cast

import pytest
import redis

from channels import RedisChannel, RedisChannelReader
from shared.events import ProtocolEvent
from shared.jobs import ClientSeed, ProtocolName
from shared.texts import RUN_FAILED
from tests.support.sse import events_of
from web.dispatch import _relayed

pytestmark = pytest.mark.integration


@pytest.fixture
def reader_client(redis_url: str) -> Iterator[redis.Redis]:
    # A name of its own, so that this test kills only the reader's own connection.
    client = redis.Redis.from_url(redis_url, client_name=f"relay-fault-{uuid.uuid4().hex}")
    yield client
    client.close()


def _kill_connections_named(admin: redis.Redis, name: str) -> int:
    killed = 0
    for entry in cast(list[dict[str, str]], admin.client_list()):
        if entry.get("name") == name:
            admin.client_kill_filter(_id=entry["id"])
            killed += 1
    return killed


def _wire_error(protocol: ProtocolName, body: str) -> tuple[str, str | None]:
    last = events_of(body)[-1]
    if protocol == "vercel":
        return last["errorText"], None
    return last["message"], last.get("code")


@pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
def test_a_relay_that_hears_nothing_for_its_timeout_reports_a_lost_stream(
    reader_client: redis.Redis, protocol: ProtocolName
) -> None:
    name = f"relayline:relay:{uuid.uuid4().hex}"
    reader = RedisChannelReader(reader_client, name, timeout=0.5)
    reader.subscribe()
    body = "".join(_relayed(reader, protocol, "t-quiet", ClientSeed(), heartbeat=10))
    message, code = _wire_error(protocol, body)
    assert RUN_FAILED not in body
    assert "was lost" in message and "t-quiet" in message
    assert code in (None if protocol == "vercel" else "STREAM_INTERRUPTED",)


def test_a_relay_whose_redis_connection_drops_mid_answer_reports_a_lost_stream(
    reader_client: redis.Redis, redis_url: str
) -> None:
    name = f"relayline:relay:{uuid.uuid4().hex}"
    admin = redis.Redis.from_url(redis_url)
    publisher = redis.Redis.from_url(redis_url)
    try:
        reader = RedisChannelReader(reader_client, name, timeout=2)
        reader.subscribe()
        RedisChannel(publisher, name).send(ProtocolEvent("text", {"content": "Hello"}))
        body = _relayed(reader, "native", "t-drop", ClientSeed(), heartbeat=10)
        first = next(body)
        assert '"Hello"' in first
        own_name = reader_client.connection_pool.connection_kwargs["client_name"]
        assert _kill_connections_named(admin, own_name) >= 1
        rest = "".join(body)  # whether redis-py reconnects or raises, the stream is lost
    finally:
        admin.close()
        publisher.close()
    events = events_of(first + rest)
    assert [e["type"] for e in events] == ["text", "error"]
    assert events[-1]["code"] == "STREAM_INTERRUPTED"
    assert RUN_FAILED not in rest
