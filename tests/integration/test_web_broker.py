"""The web's Celery client on a real Redis broker: every publish lands on the queue,
and its channel keeps one Redis client instead of building one per publish."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import cast

import pytest
import redis

from relayline.process.redis_channel import ReusingChannel
from relayline.shared.jobs import RUN_TURN, TurnJobJSON
from relayline.web.broker import web_celery
from relayline.web.sending import send_by_name
from relayline.web.services import Services

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


def test_a_send_from_a_new_thread_builds_no_result_backend(redis_url: str) -> None:
    """Celery keeps its result backend and reply address per thread (per greenlet under
    gevent): the web's sends build neither, and the message says its result is unread."""
    app = web_celery(redis_url)
    client = redis.Redis.from_url(redis_url)
    queue = "relayline-test-web-broker-unread"
    svc = cast(Services, SimpleNamespace(celery=app, settings=SimpleNamespace(queue=queue)))
    job = cast(TurnJobJSON, {"threadId": "t-unread", "runId": "run_unread"})
    built: list[bool] = []

    def send() -> None:
        send_by_name(svc, RUN_TURN, job)
        local = vars(app)["_local"]  # Celery's per-thread state
        built.append(hasattr(local, "backend") or hasattr(local, "oid"))

    try:
        client.delete(queue)
        for _ in range(2):
            sender = threading.Thread(target=send)
            sender.start()
            sender.join()
        assert built == [False, False]
        bodies = [json.loads(m) for m in cast(list[bytes], client.lrange(queue, 0, -1))]
        assert [b["headers"]["ignore_result"] for b in bodies] == [True, True]
        assert {b["properties"]["reply_to"] for b in bodies} == {app.oid}
    finally:
        client.delete(queue)
        client.close()
