"""Messages a worker cannot run, published raw to the broker (Redis and RabbitMQ): each is
dead-lettered with its reason code and acknowledged, the worker lives on, nothing comes
back on the queue, and a normal turn runs afterwards.

Before the guard, a body that is JSON but not Celery's ``[args, kwargs, embed]``
(``{"a":1}``, ``[1]``, ``[]``, ``"x"``, ``null``) made the worker exit ("Unrecoverable
error") and the message went back on the queue for the next worker to die on; on Redis,
bytes that are not a kombu envelope at all killed it inside kombu's transport."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

import pytest
import redis
import requests
from kombu import Connection, Exchange, Queue

from relayline.channels.keys import DEAD_LETTER
from relayline.shared.jobs import RUN_TURN
from relayline.worker.dead_letter import DeadLetter
from tests.support.rabbitmq import rabbitmq_vhost
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import Worker, fresh_env, running_stack

pytestmark = pytest.mark.integration

#: kombu's Redis transport keeps the default queue under its name, and what it has
#: delivered but not yet seen acknowledged in this hash
QUEUE = "celery"
UNACKED = "unacked"
#: one body over the worker's 4 MiB bound
OVERSIZED = json.dumps([[], {"job": "x" * (5 * 1024 * 1024)}, {}]).encode()


@dataclass(frozen=True)
class Published:
    """One task message sent as it is, with the reason code it must be dead-lettered with."""

    #: None: a message without Celery's task headers at all
    task_id: str | None
    body: bytes
    code: str
    task: str = RUN_TURN
    extra_headers: dict[str, object] = field(default_factory=dict)


def _messages(prefix: str) -> list[Published]:
    shapes = [b'{"a":1}', b"[1]", b"[]", b'"x"', b"null", b"[[],[],{}]", b'["x",{},{}]']
    messages = [
        Published(f"{prefix}shape-{index}", shape, "not-task-shape")
        for index, shape in enumerate(shapes)
    ]
    return [
        *messages,
        Published(f"{prefix}unknown", b"[[],{},{}]", "unknown-task", task="relayline.nope"),
        Published(f"{prefix}not-json", b"{not json", "undecodable"),
        Published(f"{prefix}not-utf8", b'["\xff\xfe"]', "undecodable"),
        Published(f"{prefix}oversized", OVERSIZED, "too-large"),
        Published(f"{prefix}arguments", b"[[1,2,3],{},{}]", "bad-arguments"),
        Published(
            f"{prefix}expires", b"[[],{},{}]", "bad-headers", extra_headers={"expires": "soon"}
        ),
        Published(
            f"{prefix}limits", b"[[],{},{}]", "bad-headers", extra_headers={"timelimit": "x"}
        ),
        Published(None, f'{{"headerless":"{prefix}"}}'.encode(), "not-task-shape"),
    ]


def _headers(message: Published) -> dict[str, object]:
    if message.task_id is None:
        return {}
    return {
        "lang": "py",
        "task": message.task,
        "id": message.task_id,
        "root_id": message.task_id,
        "parent_id": None,
        "group": None,
        "retries": 0,
        "eta": None,
        "expires": None,
        "timelimit": [None, None],
        "argsrepr": "()",
        "kwargsrepr": "{}",
        "origin": "test",
        **message.extra_headers,
    }


def _publish(broker_url: str, messages: list[Published]) -> None:
    """Publish to Celery's default queue, declared as the worker declares it (so that a
    message published before any worker started waits for it)."""
    exchange = Exchange(QUEUE, "direct")
    with Connection(broker_url) as connection:
        producer = connection.Producer()
        for message in messages:
            producer.publish(
                message.body,
                exchange=exchange,
                routing_key=QUEUE,
                declare=[Queue(QUEUE, exchange, routing_key=QUEUE)],
                content_type="application/json",
                content_encoding="utf-8",
                headers=_headers(message),
            )


def _entries(client: redis.Redis, at_least: int, worker: Worker) -> list[DeadLetter]:
    """The dead-letter list, oldest first, once it holds ``at_least`` entries."""
    deadline = time.monotonic() + 60
    while (held := cast(int, client.llen(DEAD_LETTER))) < at_least:
        assert worker.process.poll() is None, worker.log.read_text()[-3000:]
        assert time.monotonic() < deadline, (
            f"{held} of {at_least} dead-lettered: " + worker.log.read_text()[-3000:]
        )
        time.sleep(0.05)  # polling the dead-letter list, bounded by the deadline
    raw = cast(list[bytes], client.lrange(DEAD_LETTER, 0, -1))
    return [cast(DeadLetter, json.loads(item)) for item in reversed(raw)]


def _summary(entries: list[DeadLetter]) -> list[tuple[object, ...]]:
    return [(entry["id"], entry["code"], entry["reason"], entry["body"][:40]) for entry in entries]


def _check_entries(entries: list[DeadLetter], messages: list[Published]) -> None:
    """Each message dead-lettered once, with its code (a headerless one found by body)."""
    for message in messages:
        body = message.body.decode("utf-8", "replace")[:2048]
        found = [
            entry
            for entry in entries
            if entry["id"] == message.task_id and (message.task_id or entry["body"] == body)
        ]
        assert len(found) == 1, f"{message.task_id}: {_summary(entries)}"
        entry = found[0]
        assert entry["code"] == message.code, (message.task_id, entry["code"], entry["reason"])
        assert entry["reason"] and entry["at"] and entry["queue"] == QUEUE
        assert entry["body"] == body
        assert entry["task"] == (message.task if message.task_id else None)


def _transport_entries(entries: list[DeadLetter]) -> list[DeadLetter]:
    """Entries of items refused before they were messages (no task, no headers)."""
    return [entry for entry in entries if entry["code"] in ("not-an-envelope", "too-large")
            and entry["task"] is None]  # fmt: skip


def _one_log_line_each(worker: Worker, count: int) -> None:
    lines = [line for line in worker.log.read_text().splitlines() if "dead-lettered" in line]
    assert len(lines) == count, lines[:3]


def _normal_turn(web_url: str) -> None:
    answer = requests.post(
        f"{web_url}/api/threads/after-1/messages", json={"content": "hello"}, timeout=60
    )
    assert answer.status_code == 200
    assert text_of(events_of(answer.text)) == "Hello! hello"


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)  # polling the broker's queue, bounded by the deadline


#: bytes pushed onto the queue's Redis list as they are: not kombu envelopes
RAW_ITEMS = [b"\xff\x00 not even text", b"not json", b'{"a":1}', b"[1]", b"null"]
#: over the transport's bound, refused before it is parsed
HUGE_ITEM = b"[" + b" " * (9 * 1024 * 1024) + b"]"
#: an envelope the intake script takes (it has a tag and delivery_info) but kombu cannot
#: build a message of: its base64 body has a bad padding
BAD_BODY_ENVELOPE = json.dumps(
    {
        "body": "abc",
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {},
        "properties": {
            "body_encoding": "base64",
            "delivery_tag": "bad-body-tag",
            "delivery_info": {"exchange": QUEUE, "routing_key": QUEUE},
        },
    }
).encode()


def test_unrunnable_messages_on_redis(tmp_path: Path, redis_databases: RedisDatabases) -> None:
    waiting, live = _messages("waiting-"), _messages("live-")
    refused_items = [BAD_BODY_ENVELOPE, *RAW_ITEMS, HUGE_ITEM]
    with redis_databases.database(f"unrunnable {tmp_path.name}") as redis_url:
        client = redis.Redis.from_url(redis_url)
        try:
            # Waiting before the worker starts, in this order: the script takes the bad
            # body envelope in a batch behind the first messages, BRPOP the raw bytes.
            _publish(redis_url, waiting[:6])
            for item in refused_items:
                client.lpush(QUEUE, item)
            _publish(redis_url, waiting[6:])
            with running_stack(fresh_env(tmp_path, redis_url), workers=1) as (web, workers):
                expected = len(waiting) + len(refused_items)
                entries = _entries(client, expected, workers[0])
                _check_entries(entries, waiting)
                transport = _transport_entries(entries)
                assert sorted(entry["code"] for entry in transport) == sorted(
                    ["not-an-envelope"] * (1 + len(RAW_ITEMS)) + ["too-large"]
                ), _summary(transport)
                bodies = {entry["body"] for entry in transport}
                assert {"not json", '{"a":1}', "[1]", "null"} <= bodies

                # A worker already running takes the same as they come.
                _publish(redis_url, live)
                client.lpush(QUEUE, b"not json either")
                expected += len(live) + 1
                _check_entries(_entries(client, expected, workers[0]), live)

                _normal_turn(web.url)
                assert workers[0].process.poll() is None
                # all acknowledged: none waiting, none held as unacked for redelivery
                _until(lambda: client.llen(QUEUE) == 0 and client.hlen(UNACKED) == 0, "left")
                assert client.llen(DEAD_LETTER) == expected
                _one_log_line_each(workers[0], expected)
        finally:
            client.close()


@pytest.fixture
def amqp_broker() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


def _amqp_queue_depth(broker_url: str) -> int:
    """Messages RabbitMQ holds for the queue, ready and unacknowledged alike."""
    vhost = urlsplit(broker_url).path.lstrip("/") or "/"
    listed = subprocess.run(
        ["rabbitmqctl", "list_queues", "-p", vhost, "name", "messages", "--formatter", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    queues = {row["name"]: int(row["messages"]) for row in json.loads(listed.stdout)}
    return queues.get(QUEUE, 0)


def test_unrunnable_messages_on_rabbitmq(
    tmp_path: Path, redis_databases: RedisDatabases, amqp_broker: str
) -> None:
    waiting, live = _messages("waiting-"), _messages("live-")
    with redis_databases.database(f"unrunnable amqp {tmp_path.name}") as redis_url:
        client = redis.Redis.from_url(redis_url)
        env = fresh_env(tmp_path, redis_url, CELERY_BROKER_URL=amqp_broker)
        try:
            _publish(amqp_broker, waiting)  # before the worker starts
            with running_stack(env, workers=1) as (web, workers):
                _check_entries(_entries(client, len(waiting), workers[0]), waiting)
                _publish(amqp_broker, live)
                expected = len(waiting) + len(live)
                _check_entries(_entries(client, expected, workers[0]), live)

                _normal_turn(web.url)
                assert workers[0].process.poll() is None
                _until(lambda: _amqp_queue_depth(amqp_broker) == 0, "left on RabbitMQ")
                assert client.llen(DEAD_LETTER) == expected
                _one_log_line_each(workers[0], expected)
        finally:
            client.close()
