"""A relayed turn with no worker running (issue 32, web.waiting), against the production
web server (gunicorn's gevent worker) and a real Celery worker started later: the
response starts within RELAYLINE_QUEUED_NOTICE_SECONDS with a ``queued`` status in the
protocol's vocabulary and stays open; after RELAYLINE_NO_WORKER_SECONDS the client gets
the error code ``no_worker``; the turn is withdrawn (the thread is free, nothing stays
counted or announced), and a worker that starts afterwards never runs it.

Before this, such a POST got no response headers at all until the relay's heartbeat."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from relayline.channels.stream.log import active_segment
from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import Worker, fresh_env
from tests.support.turn_bodies import new_turn
from tests.support.vercel import VercelSchema
from tests.support.web_process import WebProcess

pytestmark = pytest.mark.integration

NOTICE = 0.5
GIVE_UP = 3.0


class Stack:
    def __init__(self, env: dict[str, str], web: WebProcess, redis_url: str, counts: Path) -> None:
        self.env = env
        self.web = web
        self.redis_url = redis_url
        self.counts = counts


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[Stack]:
    counts = tmp_path_factory.mktemp("waiting")
    waits = {
        "RELAYLINE_QUEUED_NOTICE_SECONDS": str(NOTICE),
        "RELAYLINE_NO_WORKER_SECONDS": str(GIVE_UP),
    }
    with redis_databases.database("waiting for a worker") as redis_url:
        env = fresh_env(counts, redis_url, **waits)
        web = WebProcess(env, counts, "web")
        try:
            yield Stack(env, web, redis_url, counts)
        finally:
            web.stop()


def post_turn(url: str, protocol: str, thread: str, text: str) -> requests.Response:
    """Post a new relayed turn in ``protocol``; the response once its headers are in."""
    path, body = new_turn(protocol, thread, text)
    # The read timeout bounds each wait for bytes: a response with no headers fails here.
    return requests.post(url + path, json=body, stream=True, timeout=(5, GIVE_UP + 10))


def status_of(protocol: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """The relayline status an event carries in ``protocol``, else None."""
    if protocol == "agui" and event["type"] == "CUSTOM" and event["name"] == "relayline.status":
        return dict(event["value"])
    if protocol == "vercel" and event["type"] == "data-relayline-status":
        assert event["transient"] is True  # never part of the stored message
        return dict(event["data"])
    if protocol == "native" and event["type"] == "status":
        return {k: v for k, v in event.items() if k != "type"}
    return None


def error_code(protocol: str, events: list[dict[str, Any]]) -> str | None:
    """The code of the error frame (Vercel's error part has none: its status says it)."""
    if protocol == "agui":
        return str(next(e["code"] for e in events if e["type"] == "RUN_ERROR"))
    if protocol == "native":
        return str(next(e["code"] for e in events if e["type"] == "error"))
    assert any(e["type"] == "error" and "No worker" in e["errorText"] for e in events)
    return None


@pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
def test_no_worker_is_said_at_once_then_the_turn_is_withdrawn(
    stack: Stack, protocol: str, request: pytest.FixtureRequest
) -> None:
    thread = f"wait-{protocol}"
    began = time.monotonic()
    response = post_turn(stack.web.url, protocol, thread, "hello there")
    headers_after = time.monotonic() - began
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    # The headers come with the queued status, long before the turn is given up.
    assert headers_after < GIVE_UP - 1, f"headers after {headers_after:.2f} s"

    events: list[dict[str, Any]] = []
    stamps: list[float] = []
    for frame in frames(response):
        events.append(frame.event)
        stamps.append(time.monotonic() - began)
    statuses = [s for e in events if (s := status_of(protocol, e)) is not None]
    assert [s["state"] for s in statuses] == ["queued", "withdrawn"]
    queued, withdrawn = statuses
    assert queued["withdrawAfter"] == GIVE_UP and queued["waited"] >= NOTICE
    assert queued["workers"] == withdrawn["workers"] == 0  # none runs
    assert withdrawn["code"] == "no_worker"
    if protocol == "agui":  # the AG-UI client needs its run started before anything
        assert [e["type"] for e in events] == ["RUN_STARTED", "CUSTOM", "CUSTOM", "RUN_ERROR"]
        assert events[0] == {"type": "RUN_STARTED", "threadId": thread, "runId": f"client-{thread}"}
    if protocol == "native":
        assert events[-1]["type"] == "done" and events[-1]["status"] == "failed"
    if protocol == "vercel":  # the ai package's strict chunk schema takes the status parts
        schema: VercelSchema = request.getfixturevalue("vercel_schema")
        # Transient: the package assembles no message part (nor message) from them.
        assert schema.frames(events)["message"] is None
    assert error_code(protocol, events) in ("no_worker", None)
    # The error came at the give-up time, not at the relay's timeout.
    assert GIVE_UP <= stamps[-1] < GIVE_UP + 5

    # Withdrawn: not counted in the queue, not announced, no run on the thread.
    ready = requests.get(f"{stack.web.url}/readyz", timeout=10).json()
    assert ready["queue"]["depth"] == 0
    assert ready["workers"] == {"count": 0, "names": []}
    with redis.Redis.from_url(stack.redis_url) as raw:
        assert active_segment(raw, thread) is None
    thread_view = requests.get(f"{stack.web.url}/api/threads/{thread}", timeout=10)
    assert thread_view.status_code == 404, thread_view.text  # nothing of it was stored


def test_a_worker_that_comes_later_never_runs_a_withdrawn_turn(stack: Stack) -> None:
    """Every turn given up on so far (this one's, and the test above's) is still in the
    broker when the worker starts."""
    response = post_turn(stack.web.url, "native", "wait-late", "hello there")
    assert [f.event["type"] for f in frames(response)][-3:] == ["status", "error", "done"]
    with redis.Redis.from_url(stack.redis_url) as raw:
        waiting = raw.llen("celery")
    assert waiting >= 1, "the turns given up on are still in the broker, for a worker"
    store = Store(stack.env["DATABASE_URL"])
    worker = Worker(stack.env, "late")
    try:
        deadline = time.monotonic() + 30
        while worker.log.read_text().count("was withdrawn before a worker took it") < waiting:
            assert time.monotonic() < deadline, worker.log.read_text()[-3000:]
            time.sleep(0.05)  # polling the worker's log, bounded by the deadline
        for thread in ("wait-late", "wait-native", "wait-agui", "wait-vercel"):
            assert store.current_run(thread) is None
            assert list(store.messages(thread)) == []
        assert count(stack.counts, "model") == 0  # no model call for any of them

        ready = requests.get(f"{stack.web.url}/readyz", timeout=10).json()
        assert ready["workers"]["count"] == 1
        assert ready["workers"]["names"][0].startswith("late@")

        # The thread was left free: a new turn on it runs now, with no queued notice.
        response = post_turn(stack.web.url, "native", "wait-late", "hello again")
        events = [frame.event for frame in frames(response)]
        assert [e for e in events if e["type"] == "status"] == []
        assert events[-1]["type"] == "done" and events[-1]["status"] == "completed"
    finally:
        worker.stop()
        store.dispose()


def test_a_turn_waits_on_while_live_workers_are_all_busy(stack: Stack) -> None:
    """A live worker whose only slot is taken: past the give-up time the turn is told
    queued again with a later deadline (not withdrawn), and runs once the slot frees."""
    worker = Worker(stack.env, "busy", concurrency=1)
    answers: list[list[dict[str, Any]]] = []
    try:
        busy = post_turn(stack.web.url, "native", "busy-a", "gated")
        reader = threading.Thread(target=lambda: answers.append([f.event for f in frames(busy)]))
        reader.start()
        deadline = time.monotonic() + 30
        while count(stack.counts, "gate.reached") == 0:  # the slot is taken
            assert time.monotonic() < deadline, worker.log.read_text()[-3000:]
            time.sleep(0.05)  # polling the tool's mark, bounded by the deadline

        waiting = post_turn(stack.web.url, "native", "busy-b", "hello there")
        events: list[dict[str, Any]] = []
        for frame in frames(waiting):
            events.append(frame.event)
            statuses = [e for e in events if e["type"] == "status"]
            if len(statuses) == 2 and frame.event["type"] == "status":
                (stack.counts / "gate.open").touch()  # past the give-up: free the slot
        reader.join(timeout=30)
    finally:
        (stack.counts / "gate.open").touch()
        worker.stop()
    first, again = [e for e in events if e["type"] == "status"]
    assert (first["state"], first["withdrawAfter"], first["workers"]) == ("queued", GIVE_UP, 1)
    assert again["state"] == "queued" and again["workers"] == 1
    assert again["withdrawAfter"] > GIVE_UP and again["waited"] >= GIVE_UP
    assert events[-1] == {"type": "done", "status": "completed", "runId": events[-1]["runId"]}
    assert answers and answers[0][-1]["status"] == "completed"
