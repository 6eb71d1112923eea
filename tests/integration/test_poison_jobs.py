"""A job that cannot be run safely (nested far deeper than any real request) sent straight
to the broker, bypassing the web's bounds: the worker's main process refuses it to the
dead-letter list before the pool sees it, and the next turn on another thread runs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, cast

import pytest
import redis
import requests
from celery import Celery
from kombu import Connection, Exchange

from relayline.channels.keys import DEAD_LETTER
from relayline.shared.jobs import RUN_TURN, TurnJob, UserTurn
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import fresh_env, running_stack

pytestmark = pytest.mark.integration


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


def _send_undecodable(redis_url: str, task_id: str) -> None:
    """A task message whose JSON body nests past Python's recursion limit."""
    headers = {
        "lang": "py",
        "task": RUN_TURN,
        "id": task_id,
        "root_id": task_id,
        "parent_id": None,
        "group": None,
        "retries": 0,
        "eta": None,
        "expires": None,
        "timelimit": [None, None],
        "argsrepr": "()",
        "kwargsrepr": "{}",
        "origin": "test",
    }
    with Connection(redis_url) as connection:
        connection.Producer().publish(
            "[" * 100_000,
            exchange=Exchange("celery", "direct"),
            routing_key="celery",
            content_type="application/json",
            content_encoding="utf-8",
            headers=headers,
        )


def test_a_poison_job_is_dead_lettered_and_the_next_turn_runs(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        redis_databases.database(f"poison {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url), workers=1) as (web, workers),
    ):
        job = TurnJob(
            thread_id="poison-1", run_id="run-poison", protocol="agui", message=UserTurn("u1", "hi")
        ).to_json()
        job["seed"] = {"state": _nested(500)}
        sender = Celery("poison", broker=redis_url)
        try:
            sender.send_task(RUN_TURN, kwargs={"job": job}, task_id="poison-task")
        finally:
            sender.close()

        client = redis.Redis.from_url(redis_url)
        try:
            deadline = time.monotonic() + 30
            while client.llen(DEAD_LETTER) == 0:
                assert workers[0].process.poll() is None, workers[0].log.read_text()[-3000:]
                assert time.monotonic() < deadline, "nothing was dead-lettered"
                time.sleep(0.05)  # polling the dead-letter list, bounded by the deadline
            raw = client.lindex(DEAD_LETTER, 0)
            assert isinstance(raw, bytes)
            entry = json.loads(raw)
        finally:
            client.close()
        assert entry["task"] == RUN_TURN and entry["id"] == "poison-task"
        assert entry["code"] == "too-deep" and "depth" in entry["reason"]
        assert len(entry["body"]) <= 2048 and entry["at"]

        after = requests.post(
            f"{web.url}/api/threads/other-1/messages", json={"content": "hello"}, timeout=60
        )
        assert after.status_code == 200
        assert text_of(events_of(after.text)) == "Hello! hello"
        assert workers[0].process.poll() is None  # the worker lives on
        assert "dead-lettered" in workers[0].log.read_text()

        _send_undecodable(redis_url, "undecodable-task")
        client = redis.Redis.from_url(redis_url)
        try:
            deadline = time.monotonic() + 30
            while client.llen(DEAD_LETTER) < 2:
                assert workers[0].process.poll() is None, workers[0].log.read_text()[-3000:]
                assert time.monotonic() < deadline, "the undecodable job was not dead-lettered"
                time.sleep(0.05)  # polling the dead-letter list, bounded by the deadline
            newest = json.loads(cast(bytes, client.lindex(DEAD_LETTER, 0)))
            assert client.llen("celery") == 0  # acknowledged, not back on the queue
        finally:
            client.close()
        assert newest["id"] == "undecodable-task" and newest["code"] == "undecodable"
