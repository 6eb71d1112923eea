"""Resuming from the segment log. Native (``GET /api/threads/<id>/stream``): a client
whose connection dropped mid-answer continues from its cursor with nothing missing and
nothing twice, a second viewer replays the segment from its start, and a cursor older
than what is kept is refused. Vercel (``GET /api/chat/<id>/stream``): a reloaded chat
gets its running answer replayed from its first chunk. Real web app, Celery worker and
Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from relayline.channels import ActiveSegment, LogLimits, LogOnlyChannel, SegmentLog, announce
from relayline.channels.keys import log_key
from relayline.channels.stream.log import LogBatching, latest_segment
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.channel_support import State
from tests.support.redis_server import RedisDatabases
from tests.support.sse import Frame, events_of, frames, text_of
from tests.support.stack import WebServer, Worker, fresh_env, running_stack
from tests.support.vercel import VercelSchema
from tests.support.web_process import WebProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def web(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[WebServer]:
    with (
        redis_databases.database(f"resume {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url)) as (server, _workers),
    ):
        yield server


def test_a_dropped_stream_resumes_from_its_cursor_and_a_second_viewer_sees_it_all(
    web: WebServer, tmp_path: Path
) -> None:
    # The turn holds at its gate tool until the test opens it: mid-answer for certain.
    live = requests.post(
        f"{web.url}/api/threads/r-1/messages",
        json={"content": "gated please"},
        stream=True,
        timeout=60,
    )
    until = _until_the_gate(live)
    held = [f.event for f in until]
    ids = [f.id for f in until]
    segment = live.headers["X-Relayline-Stream-Id"]
    live.close()  # the connection drops mid-answer; the run goes on in the worker
    # The live frames carry the log's cursor (segment and sequence), as EventSource
    # would resend it.
    assert ids == [f"{segment}:{n}" for n in range(len(held))]
    cursor = ids[-1]
    assert cursor is not None

    resumed = requests.get(
        f"{web.url}/api/threads/r-1/stream", headers={"Last-Event-ID": cursor}, stream=True
    )
    viewer = requests.get(f"{web.url}/api/threads/r-1/stream", stream=True)
    assert resumed.status_code == viewer.status_code == 200
    (tmp_path / "gate.open").touch()
    rest = list(frames(resumed))
    everything = list(frames(viewer))

    # Nothing missing, nothing twice: the ids continue right after the cursor.
    assert [f.id for f in rest] == [
        f"{segment}:{n}" for n in range(len(held), len(held) + len(rest))
    ]
    whole = held + [f.event for f in rest]
    assert [f.event for f in everything] == whole
    assert [f.id for f in everything] == [f"{segment}:{n}" for n in range(len(whole))]
    assert text_of(whole) == "Before the gate.After the gate: opened"
    # The dropped part had no done (so the client resumed); the resumed part ends with it.
    assert "done" not in [e["type"] for e in held]
    assert whole[-1]["type"] == "done" and whole[-1]["status"] == "completed"
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        assert store.messages("r-1")[-1].text == "After the gate: opened"
    finally:
        store.dispose()
    assert count(tmp_path, "gate.reached") == 1

    # The segment ended. A client holding its last event has it all; one reconnecting
    # just after the end (it missed the last events) still gets them while kept.
    for last in (f"{segment}:{len(whole) - 1}", str(len(whole) - 1)):  # a bare one too
        ended = requests.get(
            f"{web.url}/api/threads/r-1/stream", headers={"Last-Event-ID": last}, timeout=10
        )
        assert ended.status_code == 204
    late = requests.get(f"{web.url}/api/threads/r-1/stream?after={len(whole) - 3}", timeout=10)
    assert [f.event for f in frames(late)] == whole[-2:]


def test_after_the_retention_a_cursor_is_gone_and_a_reload_finds_nothing(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        redis_databases.database(f"retention {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url, RELAYLINE_STREAM_RETENTION="1")) as (
            web,
            _workers,
        ),
    ):
        answer = requests.post(
            f"{web.url}/api/threads/t-1/messages", json={"content": "hello"}, timeout=60
        )
        last = [line for line in answer.text.splitlines() if line.startswith("id: ")][-1]
        cursor = last[len("id: ") :]
        chat = {
            "id": "t-2",
            "trigger": "submit-message",
            "messages": [{"id": "u-t2", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        }
        assert requests.post(f"{web.url}/api/chat", json=chat, timeout=60).status_code == 200
        redis_client = web.app.extensions["relayline"].redis
        segment = latest_segment(redis_client, "t-1")
        assert segment is not None
        assert requests.get(f"{web.url}/api/threads/t-1/stream?after=0", timeout=10).ok

        deadline = time.monotonic() + 10
        while redis_client.exists(log_key(segment.segment_id)):
            assert time.monotonic() < deadline, "the log outlived its one-second retention"
            time.sleep(0.1)  # the passing of the retention is what is tested, bounded

        gone = requests.get(
            f"{web.url}/api/threads/t-1/stream", headers={"Last-Event-ID": cursor}, timeout=10
        )
        assert gone.status_code == 410 and gone.json()["type"] == "Gone"
        assert requests.get(f"{web.url}/api/threads/t-1/stream", timeout=10).status_code == 204
        assert requests.get(f"{web.url}/api/chat/t-2/stream", timeout=10).status_code == 204


def test_a_cursor_older_than_the_log_keeps_is_gone_and_bad_input_is_refused(
    web: WebServer,
) -> None:
    services = web.app.extensions["relayline"]
    services.store.create_thread("r-old", "anonymous")
    limits = LogLimits(retention=60, max_age=600, max_events=100)
    segment_id = new_segment_id()
    announce(services.redis, "r-old", ActiveSegment("native", segment_id), limits)
    # One envelope per entry: the cap trims whole entries, so with batching a fast
    # writer could put most of the segment in one entry and keep cursor 5 readable.
    one_each = LogBatching(linger=0, max_envelopes=1)
    log = SegmentLog(services.redis, segment_id, "r-old", limits, batching=one_each)
    channel = LogOnlyChannel().into_segment(segment_id, log)
    for index in range(1000):
        channel.send(ProtocolEvent("text", {"content": str(index)}))

    gone = requests.get(f"{web.url}/api/threads/r-old/stream?after=5", timeout=10)
    assert gone.status_code == 410
    assert gone.json()["type"] == "Gone" and "the cursor 5 is older" in gone.json()["error"]
    # Without a cursor the whole segment is asked for: trimmed, it is gone too.
    assert requests.get(f"{web.url}/api/threads/r-old/stream", timeout=10).status_code == 410
    # A cursor inside what is kept resumes (here: the newest event, live after it).
    tail = requests.get(f"{web.url}/api/threads/r-old/stream?after=998", stream=True, timeout=10)
    first = next(frames(tail))
    tail.close()
    assert (first.id, first.event) == (f"{segment_id}:999", {"type": "text", "content": "999"})

    bad = requests.get(f"{web.url}/api/threads/r-old/stream?after=soon", timeout=10)
    assert bad.status_code == 400 and bad.json()["type"] == "BadRequest"
    missing = requests.get(f"{web.url}/api/threads/nobody/stream", timeout=10)
    assert missing.status_code == 404


def test_a_reloaded_use_chat_gets_the_running_answer_replayed_from_its_start(
    web: WebServer, tmp_path: Path, vercel_schema: VercelSchema
) -> None:
    """What ``useChat({ resume: true })`` does after a reload: GET the chat's stream."""
    body = {
        "id": "v-1",
        "trigger": "submit-message",
        "messages": [{"id": "u-v1", "role": "user", "parts": [{"type": "text", "text": "gated"}]}],
    }
    live = requests.post(f"{web.url}/api/chat", json=body, stream=True, timeout=60)
    held = [f.event for f in _until_the_gate(live)]
    live.close()  # the page reloads mid-answer

    assert requests.get(f"{web.url}/api/chat/not-yet-a-chat/stream", timeout=10).status_code == 204
    resumed = requests.get(f"{web.url}/api/chat/v-1/stream", stream=True, timeout=60)
    assert resumed.status_code == 200
    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    (tmp_path / "gate.open").touch()
    replay = [f.event for f in frames(resumed)]

    # From its first chunk: the start names the same assistant message as live did.
    assert replay[: len(held)] == held
    (start,) = [e for e in replay if e["type"] == "start"]
    assert start == next(e for e in held if e["type"] == "start") and start["messageId"]
    assert replay[-1]["type"] == "finish"
    message = vercel_schema.frames(replay)["message"]  # the ai package assembles it, strictly
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts == ["Before the gate.", "After the gate: opened"]
    assert requests.get(f"{web.url}/api/chat/v-1/stream", timeout=10).status_code == 204


def _until_the_gate(response: requests.Response) -> list[Frame]:
    """The frames of a gated turn up to its gate tool starting (the turn then holds)."""
    held: list[Frame] = []
    for frame in frames(response):
        held.append(frame)
        kind = frame.event["type"]
        data: dict[str, Any] = frame.event.get("data") or {}
        if kind == "data-workflow-activity":
            data = data.get("data") or {}  # Vercel wraps the activity once more
        if kind in ("activity", "data-workflow-activity") and data.get("status") == "running":
            return held
    raise AssertionError("the turn ended before its gate")


def test_a_web_process_killed_mid_answer_loses_nothing_and_three_viewers_agree(
    tmp_path: Path, redis_databases: RedisDatabases, vercel_schema: VercelSchema
) -> None:
    with redis_databases.database(f"web loss {tmp_path.name}") as redis_url:
        env = fresh_env(tmp_path, redis_url)
        workers = [Worker(env, "w0"), Worker(env, "w1")]  # both turns hold at once
        webs = [WebProcess(env, tmp_path, "web-a")]
        try:
            native_live = requests.post(
                f"{webs[0].url}/api/threads/k-native/messages",
                json={"content": "gated please"},
                stream=True,
                timeout=60,
            )
            native_held = _until_the_gate(native_live)
            vercel_live = requests.post(
                f"{webs[0].url}/api/chat",
                json={
                    "id": "k-vercel",
                    "trigger": "submit-message",
                    "messages": [
                        {"id": "u-kv", "role": "user", "parts": [{"type": "text", "text": "gated"}]}
                    ],
                },
                stream=True,
                timeout=60,
            )
            vercel_held = _until_the_gate(vercel_live)

            webs[0].kill()  # the web process dies mid-answer, both connections with it
            native_live.close()
            vercel_live.close()
            webs.append(WebProcess(env, tmp_path, "web-b"))
            url = webs[1].url

            segment = native_live.headers["X-Relayline-Stream-Id"]
            cursor = native_held[-1].id
            assert cursor == f"{segment}:{len(native_held) - 1}"
            resumed = requests.get(
                f"{url}/api/threads/k-native/stream",
                headers={"Last-Event-ID": cursor},
                stream=True,
                timeout=60,
            )
            viewers = [
                requests.get(f"{url}/api/threads/k-native/stream", stream=True, timeout=60)
                for _ in range(3)
            ]
            reloaded = requests.get(f"{url}/api/chat/k-vercel/stream", stream=True, timeout=60)
            assert [r.status_code for r in (resumed, *viewers, reloaded)] == [200] * 5
            (tmp_path / "gate.open").touch()

            rest = list(frames(resumed))
            seen = [[(f.id, f.event) for f in frames(viewer)] for viewer in viewers]
            replay = [f.event for f in frames(reloaded)]
        finally:
            for web in webs:
                web.stop()
            for worker in workers:
                worker.stop()

    # Native: continued after the cursor, nothing missing, nothing twice.
    whole = [f.event for f in native_held] + [f.event for f in rest]
    assert [f.id for f in rest] == [f"{segment}:{n}" for n in range(len(native_held), len(whole))]
    assert text_of(whole) == "Before the gate.After the gate: opened"
    assert whole[-1]["type"] == "done" and "done" not in [f.event["type"] for f in native_held]
    # Three viewers of one run receive identical sequences: the whole segment.
    assert seen[0] == seen[1] == seen[2] == [(f"{segment}:{n}", e) for n, e in enumerate(whole)]
    # Vercel: the reload replays from the first chunk what the dead process had sent.
    assert replay[: len(vercel_held)] == [f.event for f in vercel_held]
    message = vercel_schema.frames(replay)["message"]
    assert [p["text"] for p in message["parts"] if p["type"] == "text"] == [
        "Before the gate.",
        "After the gate: opened",
    ]
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        for thread in ("k-native", "k-vercel"):
            stored = [m.text for m in store.messages(thread) if m.role == "assistant"]
            assert stored == ["Before the gate.", "After the gate: opened"]
    finally:
        store.dispose()


def test_a_reader_left_on_a_lost_segment_is_told_once_a_newer_one_begins(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    """A segment whose worker died never gets its terminal; its run's recovery writes a
    new segment. A client resumed on the old one gets the protocol's error frame (then
    reloads) instead of waiting out the relay timeout."""
    with redis_databases.database(f"replaced {tmp_path.name}") as redis_url:
        web = WebServer(fresh_env(tmp_path, redis_url), {"RELAYLINE_HEARTBEAT_SECONDS": 0.05})
        try:
            services = web.app.extensions["relayline"]
            services.store.create_thread("r-swap", "anonymous")
            lost = _segment_of(services.redis, "r-swap")
            lost.send(ProtocolEvent("text", {"content": "from the lost worker"}))

            reading = requests.get(f"{web.url}/api/threads/r-swap/stream", stream=True, timeout=30)
            received = frames(reading)
            first = next(received)
            assert first.event == {"type": "text", "content": "from the lost worker"}
            recovery = _segment_of(services.redis, "r-swap")  # the recovered run's segment
            recovery.send(ProtocolEvent("text", {"content": "from the recovery"}))
            told = list(received)
            rest = [f.event for f in told]
        finally:
            web.stop()
    assert [e["type"] for e in rest] == ["error"]  # then the response ends
    # Not "The run failed.": the run goes on, and the code says where to follow it.
    assert rest[0]["code"] == "RUN_CONTINUES_ELSEWHERE" and "Resume" in rest[0]["message"]
    # Its id is the cursor EventSource resends: the newer segment from its start.
    assert told[0].id == f"{recovery.segment_id}:-1"


def _segment_of(client: Any, thread: str) -> LogOnlyChannel:
    segment_id = new_segment_id()
    return LogOnlyChannel().into_segment(segment_id, SegmentLog(client, segment_id, thread, LIMITS))


LIMITS = LogLimits(retention=60, max_age=600, max_events=1000)


def test_a_cursor_of_a_replaced_segment_resumes_the_recovery_from_its_first_frame(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    """The takeover splice (issue 34, fault 12): the run's recovery writes a new segment
    whose sequences start again at 0, with words of its own. A client resuming with the
    lost segment's cursor gets the rest of the lost segment, then the signal that the
    run goes on elsewhere, whose id is the new segment's start; resuming from that id
    (as EventSource does by itself) gives the new segment whole. Never the new segment
    read from the old position."""
    with redis_databases.database(f"takeover {tmp_path.name}") as redis_url:
        web = WebServer(fresh_env(tmp_path, redis_url), {"RELAYLINE_HEARTBEAT_SECONDS": 0.05})
        try:
            services = web.app.extensions["relayline"]
            services.store.create_thread("r-take", "anonymous")
            lost = _segment_of(services.redis, "r-take")
            for word in ("The ", "lost ", "worker ", "was ", "cut"):
                lost.send(ProtocolEvent("text", {"content": word}))
            recovery = _segment_of(services.redis, "r-take")
            for word in ("A ", "recovered ", "answer."):
                recovery.send(ProtocolEvent("text", {"content": word}))
            recovery.completed(State("r-take"), "r-take")
            old, new = lost.segment_id, recovery.segment_id

            told = requests.get(
                f"{web.url}/api/threads/r-take/stream",
                headers={"Last-Event-ID": f"{old}:2"},
                timeout=30,
            )
            assert told.status_code == 200
            got = list(frames(told))
            assert [(f.id, f.event.get("content")) for f in got[:2]] == [
                (f"{old}:3", "was "),
                (f"{old}:4", "cut"),
            ]
            (signal,) = got[2:]
            assert signal.event["type"] == "error"
            assert signal.event["code"] == "RUN_CONTINUES_ELSEWHERE"
            assert signal.id == f"{new}:-1"

            again = requests.get(
                f"{web.url}/api/threads/r-take/stream",
                headers={"Last-Event-ID": signal.id},
                timeout=30,
            )
            rest = list(frames(again))
            assert [f.id for f in rest] == [f"{new}:{n}" for n in range(3)]
            assert text_of([f.event for f in rest]) == "A recovered answer."
            # A bare sequence (a client of before 0.3) still means the newest segment.
            bare = requests.get(f"{web.url}/api/threads/r-take/stream?after=0", timeout=30)
            assert text_of(events_of(bare.text)) == "recovered answer."
            # A cursor naming a segment this thread does not keep: reload (410).
            unknown = requests.get(
                f"{web.url}/api/threads/r-take/stream",
                headers={"Last-Event-ID": f"{new_segment_id()}:0"},
                timeout=30,
            )
            assert unknown.status_code == 410 and "reload" in unknown.json()["error"]
            bad = requests.get(
                f"{web.url}/api/threads/r-take/stream",
                headers={"Last-Event-ID": f"{new}:x"},
                timeout=30,
            )
            assert bad.status_code == 400 and "stream id" in bad.json()["error"]
        finally:
            web.stop()


def test_a_cursor_of_an_ended_segment_continues_with_the_next_turn_from_its_start(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    """A client that read a turn to its end (or nearly) while another tab started the
    next: its rest, then the next turn's segment whole, live to its end."""
    with redis_databases.database(f"next turn {tmp_path.name}") as redis_url:
        web = WebServer(fresh_env(tmp_path, redis_url), {"RELAYLINE_HEARTBEAT_SECONDS": 0.05})
        try:
            services = web.app.extensions["relayline"]
            services.store.create_thread("r-next", "anonymous")
            first = _segment_of(services.redis, "r-next")
            for word in ("First ", "turn."):
                first.send(ProtocolEvent("text", {"content": word}))
            first.completed(State("r-next"), "r-next")
            second = _segment_of(services.redis, "r-next")
            second.send(ProtocolEvent("text", {"content": "Second "}))
            old, new = first.segment_id, second.segment_id

            resumed = requests.get(
                f"{web.url}/api/threads/r-next/stream",
                headers={"Last-Event-ID": f"{old}:0"},
                stream=True,
                timeout=30,
            )
            received = frames(resumed)
            seen = [next(received), next(received)]
            second.send(ProtocolEvent("text", {"content": "turn."}))  # live, after the replay
            second.completed(State("r-next"), "r-next")
            seen += list(received)
        finally:
            web.stop()
    assert [(f.id, f.event.get("content")) for f in seen] == [
        (f"{old}:1", "turn."),
        (f"{new}:0", "Second "),
        (f"{new}:1", "turn."),
    ]
