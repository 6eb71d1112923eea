"""RabbitMQ as the Celery broker (``CELERY_BROKER_URL=amqp://...``; Redis stays the relay,
the segment log and the heartbeats): turns run, and a whole worker lost mid-run is taken
over exactly once, whether RabbitMQ's redelivery or the sweeper gets there first."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.rabbitmq import rabbitmq_vhost
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env, running_stack

pytestmark = pytest.mark.integration


@pytest.fixture
def broker() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


def test_a_turn_runs_through_rabbitmq(
    tmp_path: Path, redis_databases: RedisDatabases, broker: str
) -> None:
    with (
        redis_databases.database(f"amqp {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url, CELERY_BROKER_URL=broker)) as (web, _),
    ):
        answer = requests.post(
            f"{web.url}/api/threads/mq-1/messages", json={"content": "hello"}, timeout=60
        )
        assert answer.status_code == 200
        assert text_of(events_of(answer.text)) == "Hello! hello"
        weather = requests.post(
            f"{web.url}/api/threads/mq-2/messages", json={"content": "Weather?"}, timeout=60
        )
        assert text_of(events_of(weather.text)) == "Weather: sunny in Oslo"
        assert count(tmp_path, "tool.weather") == 1


def test_a_lost_worker_is_taken_over_once_on_rabbitmq(
    tmp_path: Path, redis_databases: RedisDatabases, broker: str
) -> None:
    env = {"CELERY_BROKER_URL": broker, "RELAYLINE_TEST_KILL_WORKER_ON_CALL": "2"}
    with redis_databases.database(f"amqp loss {tmp_path.name}") as redis_url:
        full = fresh_env(tmp_path, redis_url, **env)
        workers = [Worker(full, "w0"), Worker(full, "w1")]
        web = WebServer(full)
        try:
            started = time.monotonic()
            lost = requests.post(
                f"{web.url}/api/threads/mq-lost/messages", json={"content": "Weather?"}, timeout=90
            )
            assert lost.status_code == 200
            assert count(tmp_path, "killed") == 1
            store = Store(full["DATABASE_URL"])
            try:
                record = store.current_run("mq-lost")
                while record is not None and record.status != "completed":
                    assert time.monotonic() - started < 60, "not taken over in 60 s"
                    time.sleep(0.1)  # polling the stored run, bounded above
                    record = store.current_run("mq-lost")
                assert record is not None and record.attempt == 2  # one takeover, not two
                assert store.messages("mq-lost")[-1].text == "Weather: sunny in Oslo"
            finally:
                store.dispose()
            assert count(tmp_path, "tool.weather") == 1
            assert count(tmp_path, "model") == 2
        finally:
            web.stop()
            for worker in workers:
                worker.stop()
