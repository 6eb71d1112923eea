"""The web's Celery client on a real Redis broker: every publish lands on the queue,
and its channel keeps one Redis client instead of building one per publish."""

from __future__ import annotations

import json
from typing import cast

import pytest
import redis

from web.broker import ReusingChannel, web_celery

pytestmark = pytest.mark.integration


def test_publishes_reach_the_queue_through_one_kept_client(redis_url: str) -> None:
    app = web_celery(redis_url)
    client = redis.Redis.from_url(redis_url)
    queue = "relayline-test-web-broker"
    try:
        client.delete(queue)
        for n in range(3):
            app.send_task("relayline.nothing", kwargs={"n": n}, queue=queue)
        bodies = [json.loads(m) for m in cast(list[bytes], client.lrange(queue, 0, -1))]
        assert sorted(b["headers"]["task"] for b in bodies) == ["relayline.nothing"] * 3
        with app.connection_for_write() as connection:
            channel = connection.default_channel
            assert isinstance(channel, ReusingChannel)
            with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
                assert first is second
    finally:
        client.delete(queue)
        client.close()


@pytest.mark.parametrize(
    "url", ["amqp://guest:guest@127.0.0.1:5672//", "rediss://127.0.0.1:6380/0"]
)
def test_other_brokers_keep_their_own_transport(url: str) -> None:
    assert web_celery(url).conf.broker_transport is None
