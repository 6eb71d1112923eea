"""Stopping runs through the HTTP routes of every client family, with a real worker,
web app and Redis: the model stream is closed mid-answer, the stream ends with the
protocol's own "stopped" frames, the partial answer stays in history marked stopped,
and the thread takes the next turn at once. Also: a stop during an approval wait, a
stop racing the natural end (exactly one terminal), ``onDisconnect=cancel``, and the
refusals (unknown agent, unknown thread, bad input)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from relayline.channels.envelope import Envelope
from relayline.channels.keys import STOPS_CHANNEL
from relayline.channels.stream.log import entries, latest_segment
from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, frames, text_of
from tests.support.stack import WebServer, Worker, fresh_env, running_stack

pytestmark = pytest.mark.integration

#: the "story" rule streams 720 deltas over about 36 s: a stop lands far before its end
STORY_DELTAS = 720


@pytest.fixture
def stack(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[tuple[WebServer, str]]:
    with (
        redis_databases.database(f"stop {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url)) as (server, _workers),
    ):
        yield server, redis_url


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'db.sqlite'}", migrate=False)


def _read_until(stream: Iterator[Any], texts: int, is_text: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for frame in stream:
        seen.append(frame.event)
        if sum(1 for e in seen if is_text(e)) >= texts:
            return seen
    raise AssertionError(f"the stream ended before {texts} text frames: {seen}")


def _assert_model_stream_closed(tmp_path: Path) -> None:
    assert count(tmp_path, "model.closed") == 1  # the loop closed the provider's stream
    assert count(tmp_path, "model.delta") < STORY_DELTAS // 4


def test_native_cancel_stops_the_model_and_keeps_the_partial_answer(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, _ = stack
    live = requests.post(
        f"{web.url}/api/threads/s-native/messages",
        json={"content": "tell me a story"},
        stream=True,
        timeout=60,
    )
    stream = frames(live)
    before = _read_until(stream, 3, lambda e: e["type"] == "text")
    answer = requests.post(f"{web.url}/api/threads/s-native/cancel", timeout=10)
    assert answer.status_code == 200
    body = answer.json()
    # The status is the run's as it stands after the stop: a worker that acted on the
    # announcement within the round trip has already written it cancelled.
    assert body["stopped"] is True and body["status"] in ("running", "cancelled")
    assert body["runId"]
    rest = [f.event for f in stream]
    assert rest[-2:] == [
        {"type": "cancelled", "reason": "user"},
        {"type": "done", "status": "cancelled", "runId": body["runId"]},
    ]
    assert all(e["type"] != "error" for e in before + rest)
    _assert_model_stream_closed(tmp_path)

    thread = requests.get(f"{web.url}/api/threads/s-native", timeout=10).json()
    assert thread["run"]["status"] == "cancelled"
    streamed = "".join(e["content"] for e in before + rest if e["type"] == "text")
    store = _store(tmp_path)
    try:
        last = store.messages("s-native")[-1]
        assert last.role == "assistant" and last.meta.get("stopped") is True
        assert last.text == streamed and streamed.startswith("Once upon")
    finally:
        store.dispose()
    # Stopping again is a no-op; the thread takes the next turn at once.
    again = requests.post(f"{web.url}/api/threads/s-native/cancel", timeout=10).json()
    assert (again["stopped"], again["status"]) == (False, "cancelled")
    follow = requests.post(
        f"{web.url}/api/threads/s-native/messages", json={"content": "hi"}, timeout=60
    )
    assert follow.status_code == 200 and text_of(events_of(follow.text)).startswith("Hello!")


def test_vercel_stop_ends_with_abort_and_reloads_as_stopped(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, redis_url = stack
    chat = {
        "id": "s-vercel",
        "trigger": "submit-message",
        "messages": [
            {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "a story please"}]}
        ],
    }
    live = requests.post(f"{web.url}/api/chat", json=chat, stream=True, timeout=60)
    stream = frames(live)
    _read_until(stream, 2, lambda e: e["type"] == "text-delta")
    # A stale stream id (a Stop clicked for an earlier answer) stops nothing.
    stale = requests.post(
        f"{web.url}/api/chat/s-vercel/stop", json={"activeStreamId": "0" * 32}, timeout=10
    )
    # ``status``: the thread's run as it stands (running: the stale id stopped nothing)
    assert stale.json() == {"success": True, "stopped": False, "status": "running"}
    segment = _active_segment_id(redis_url, "s-vercel")
    assert live.headers["X-Relayline-Stream-Id"] == segment  # what the client sends back
    stop = requests.post(
        f"{web.url}/api/chat/s-vercel/stop", json={"activeStreamId": segment}, timeout=10
    )
    assert stop.status_code == 200 and stop.json() == {"success": True, "stopped": True}
    rest = [f.event for f in stream]
    assert rest[-1] == {"type": "abort", "reason": "user"}
    assert "text-end" in [e["type"] for e in rest]
    _assert_model_stream_closed(tmp_path)

    reloaded = requests.get(f"{web.url}/api/chat/s-vercel", timeout=10).json()["messages"]
    assert reloaded[-1]["role"] == "assistant"
    assert reloaded[-1]["metadata"] == {"stopped": True}
    # Idempotent, with or without a body; and nothing to resume after a stop.
    assert requests.post(f"{web.url}/api/chat/s-vercel/stop", timeout=10).json() == {
        "success": True,
        "stopped": False,
        "status": "cancelled",
    }
    assert requests.get(f"{web.url}/api/chat/s-vercel/stream", timeout=10).status_code == 204


def _active_segment_id(redis_url: str, thread_id: str) -> str:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        segment = latest_segment(client, thread_id)
        assert segment is not None
        return segment.segment_id
    finally:
        client.close()


def test_copilotkit_stop_route_answers_as_the_runtime_does(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, _ = stack
    run = {
        "threadId": "s-agui",
        "runId": "r-1",
        "state": {},
        "messages": [{"id": "u-1", "role": "user", "content": "story time"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    live = requests.post(f"{web.url}/agent/default", json=run, stream=True, timeout=60)
    assert live.status_code == 200
    stream = frames(live)
    _read_until(stream, 2, lambda e: e["type"] == "TEXT_MESSAGE_CONTENT")
    stop = requests.post(f"{web.url}/agent/default/stop/s-agui", timeout=10)
    assert stop.status_code == 200
    assert stop.json() == {
        "stopped": True,
        "interrupt": {"type": "RUN_ERROR", "message": "Run stopped by user", "code": "STOPPED"},
    }
    rest = [f.event["type"] for f in stream]
    assert rest[-1] == "RUN_FINISHED" and "RUN_ERROR" not in rest
    assert "TEXT_MESSAGE_END" in rest
    _assert_model_stream_closed(tmp_path)
    reload = requests.get(f"{web.url}/agui/threads/s-agui", timeout=10).json()
    assert reload["status"] == "cancelled" and len(reload["stopped"]) == 1

    idle = requests.post(f"{web.url}/agui/stop/s-agui", timeout=10)
    assert idle.json() == {
        "stopped": False,
        "message": "No active run for thread 's-agui'.",
        "status": "cancelled",
    }
    unknown = requests.post(f"{web.url}/agent/nobody/stop/s-agui", timeout=10)
    assert unknown.status_code == 404 and unknown.json()["error"] == "Agent not found"
    missing = requests.post(f"{web.url}/agent/default/stop/never-seen", timeout=10)
    assert missing.status_code == 404


def test_stop_during_an_approval_wait_settles_it_and_frees_the_thread(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, _ = stack
    first = requests.post(
        f"{web.url}/api/threads/s-wait/messages", json={"content": "delete it"}, timeout=60
    )
    assert '"interrupt"' in first.text
    assert requests.get(f"{web.url}/api/threads/s-wait", timeout=10).json()["run"]["status"] == (
        "suspended"
    )
    stop = requests.post(f"{web.url}/api/threads/s-wait/cancel", timeout=10).json()
    assert (stop["stopped"], stop["status"]) == (True, "cancelled")
    # The approval can no longer be given; the tool never ran; a new turn starts.
    late = requests.post(
        f"{web.url}/api/threads/s-wait/approvals", json={"call_d": "approve"}, timeout=10
    )
    assert late.status_code in (400, 409)
    assert count(tmp_path, "tool.delete_file") == 0
    follow = requests.post(
        f"{web.url}/api/threads/s-wait/messages", json={"content": "hello"}, timeout=60
    )
    assert follow.status_code == 200 and text_of(events_of(follow.text)).startswith("Hello!")


def test_a_stop_racing_the_natural_end_gives_exactly_one_terminal(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, redis_url = stack
    import redis

    client = redis.Redis.from_url(redis_url)
    outcomes: set[str] = set()
    try:
        for index in range(8):
            thread = f"s-race-{index}"
            live = requests.post(
                f"{web.url}/api/threads/{thread}/messages",
                json={"content": "slow one"},
                stream=True,
                timeout=60,
            )
            stream = frames(live)
            seen = _read_until(stream, 1 + index * 3, lambda e: e["type"] == "text")
            stopper = threading.Thread(
                target=requests.post, args=(f"{web.url}/api/threads/{thread}/cancel",)
            )
            stopper.start()
            seen += [f.event for f in stream]
            stopper.join()
            status = requests.get(f"{web.url}/api/threads/{thread}", timeout=10).json()
            cancelled = [e for e in seen if e["type"] == "cancelled"]
            assert status["run"]["status"] in ("cancelled", "completed")
            assert len(cancelled) == (1 if status["run"]["status"] == "cancelled" else 0)
            assert seen[-1] == {
                "type": "done",
                "status": status["run"]["status"],
                "runId": status["run"]["runId"],
            }
            assert all(e["type"] != "error" for e in seen)
            segment = latest_segment(client, thread)
            assert segment is not None
            logged = [Envelope.parse(e) for e in entries(client, segment.segment_id)]
            assert sum(1 for e in logged if e.is_terminal) == 1
            outcomes.add(status["run"]["status"])
    finally:
        client.close()
    assert "cancelled" in outcomes  # the race was run, not only lost by the stop


def test_on_disconnect_cancel_stops_the_run_when_the_client_goes(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, _ = stack
    live = requests.post(
        f"{web.url}/api/threads/s-drop/messages?onDisconnect=cancel",
        json={"content": "a long story"},
        stream=True,
        timeout=60,
    )
    _read_until(frames(live), 2, lambda e: e["type"] == "text")
    live.close()
    store = _store(tmp_path)
    try:
        record = _wait_for_status(store, "s-drop", "cancelled")
        assert record == "cancelled"
    finally:
        store.dispose()
    _assert_model_stream_closed(tmp_path)
    bad = requests.post(
        f"{web.url}/api/threads/s-drop/messages?onDisconnect=sometimes",
        json={"content": "hi"},
        timeout=10,
    )
    assert bad.status_code == 400 and "onDisconnect" in bad.json()["error"]


def _wait_for_status(store: Store, thread_id: str, wanted: str) -> str | None:
    """The run's status once it is ``wanted`` (a bounded wait on the database: the
    worker writes it after the web noticed the client leave)."""
    deadline = threading.Event()
    timer = threading.Timer(30, deadline.set)
    timer.start()
    try:
        while not deadline.is_set():
            record = store.current_run(thread_id)
            if record is not None and record.status == wanted:
                return record.status
            deadline.wait(0.05)
        record = store.current_run(thread_id)
        return None if record is None else record.status
    finally:
        timer.cancel()


def test_a_turn_stopped_before_any_worker_took_it_never_runs(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"stop-unstarted {tmp_path.name}") as redis_url:
        env = fresh_env(tmp_path, redis_url)
        with running_stack(env, workers=0) as (web, _none):
            _stop_the_waiting_turn(web, env, tmp_path)


def _stop_the_waiting_turn(web: WebServer, env: dict[str, str], tmp_path: Path) -> None:
    first = Worker(env, "first")
    try:  # the thread exists (and is the caller's) once its first turn ran
        done = requests.post(
            f"{web.url}/api/threads/s-queued/messages", json={"content": "hi"}, timeout=60
        )
        assert text_of(events_of(done.text)).startswith("Hello!")
    finally:
        first.stop()
    calls = count(tmp_path, "model")
    live = requests.post(
        f"{web.url}/api/threads/s-queued/messages",
        json={"content": "tell me a story"},
        stream=True,
        timeout=60,
    )
    assert live.status_code == 200  # enqueued: no worker is there to take it
    stop = requests.post(f"{web.url}/api/chat/s-queued/stop", timeout=10).json()
    assert stop == {"success": True, "stopped": True}
    late = Worker(env, "late")
    try:
        events = [f.event for f in frames(live)]
    finally:
        late.stop()
    assert [e["type"] for e in events[-2:]] == ["cancelled", "done"]
    assert events[-1]["status"] == "cancelled"
    assert count(tmp_path, "model") == calls  # the model was never called for it
    thread = requests.get(f"{web.url}/api/threads/s-queued", timeout=10).json()
    assert thread["run"]["status"] == "cancelled"


def test_a_ready_worker_listens_for_stops_before_its_first_turn(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    """Subscribed when ready, not by its first run: under a burst of turns a listener
    started by the first one took over a second to subscribe, and every run starting
    meanwhile waited for it."""
    with redis_databases.database(f"stop listener {tmp_path.name}") as redis_url:
        client = redis.Redis.from_url(redis_url)

        def listeners() -> int:
            counts: list[tuple[bytes, int]] = client.pubsub_numsub(STOPS_CHANNEL)  # type: ignore[assignment]
            return int(dict(counts).get(STOPS_CHANNEL.encode(), 0))

        before = listeners()  # Pub/Sub channels are server-wide: count from here
        worker = Worker(fresh_env(tmp_path, redis_url), "listening")
        try:
            deadline = threading.Event()
            timer = threading.Timer(10, deadline.set)
            timer.start()
            while listeners() <= before and not deadline.is_set():
                deadline.wait(0.02)  # polled: the subscription follows the ready signal
            timer.cancel()
            assert listeners() == before + 1  # no turn was sent
        finally:
            worker.stop()
            client.close()
