"""AG-UI connect (``POST /agent/<agentId>/connect``, ``/agui/connect``) with a real
worker, web app and Redis: a client that reconnects mid-run gets the stored history as
a snapshot run, then the running segment from its ``RUN_STARTED``, live to its end,
with no message twice and a stream the AG-UI validator accepts; a finished thread gets
its history only, a suspended one its interrupt; unknown threads an empty stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, frames
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration


@pytest.fixture
def web(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[WebServer]:
    with (
        redis_databases.database(f"connect {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url)) as (server, _workers),
    ):
        yield server


def _run(thread: str, text: str, message_id: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"r-{message_id}",
        "state": {},
        "messages": [{"id": message_id, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def _connect(web: WebServer, thread: str, stream: bool = False) -> requests.Response:
    body = {"threadId": thread, "runId": "r-connect", "messages": [], "state": {}}
    return requests.post(f"{web.url}/agent/default/connect", json=body, stream=stream, timeout=60)


def _runs(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    runs: list[list[dict[str, Any]]] = []
    for event in events:
        if event["type"] == "RUN_STARTED":
            runs.append([])
        runs[-1].append(event)
    return runs


def test_connect_mid_run_replays_history_then_the_live_segment(
    web: WebServer, tmp_path: Path
) -> None:
    first = requests.post(f"{web.url}/agent/default", json=_run("c-1", "hi", "u-1"), timeout=60)
    assert first.status_code == 200
    live = requests.post(
        f"{web.url}/agent/default", json=_run("c-1", "gated please", "u-2"), stream=True
    )
    for frame in frames(live):  # until the gate tool runs: mid-segment for certain
        if frame.event["type"] == "ACTIVITY_SNAPSHOT":
            break
    joined = _connect(web, "c-1", stream=True)
    assert joined.status_code == 200
    assert joined.headers["Content-Type"].startswith("text/event-stream")
    (tmp_path / "gate.open").touch()
    events = [f.event for f in frames(joined)]
    live.close()

    assert_valid_agui([json.dumps(e) for e in events], max_warnings=0)
    snapshot, segment = _runs(events)
    assert [e["type"] for e in snapshot] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    held = snapshot[1]["messages"]
    # The history before the running segment: the first turn and this turn's question.
    assert [m["id"] for m in held if m["role"] == "user"] == ["u-1", "u-2"]
    assert any(m["role"] == "assistant" and "Hello!" in m.get("content", "") for m in held)
    # The running segment from its start, to its end, live.
    assert segment[0]["type"] == "RUN_STARTED" and segment[-1]["type"] == "RUN_FINISHED"
    text = "".join(e["delta"] for e in segment if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Before the gate.After the gate: opened"
    # No message twice: what the replay starts is not in the snapshot.
    started = {e["messageId"] for e in segment if e["type"] == "TEXT_MESSAGE_START"}
    assert started and not started & {m["id"] for m in held}


def test_connect_to_a_finished_or_waiting_thread_and_the_refusals(web: WebServer) -> None:
    assert requests.post(f"{web.url}/agui", json=_run("c-2", "hi", "u-1"), timeout=60).ok
    events = events_of(_connect(web, "c-2").text)
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    roles = [m["role"] for m in events[1]["messages"]]
    assert roles[0] == "user" and "assistant" in roles

    waiting = requests.post(f"{web.url}/agui", json=_run("c-3", "delete it", "u-1"), timeout=60)
    assert waiting.ok
    events = events_of(_connect(web, "c-3").text)
    assert events[-1]["outcome"]["type"] == "interrupt"
    assert {i["id"] for i in events[-1]["outcome"]["interrupts"]} >= {"call_d"}

    empty = _connect(web, "never-seen")
    assert empty.status_code == 200 and empty.text == ""
    body = {"threadId": "c-2"}
    assert requests.post(f"{web.url}/agent/nobody/connect", json=body).status_code == 404
    assert requests.post(f"{web.url}/agui/connect", json={"threadId": 5}).status_code == 400
    assert requests.post(f"{web.url}/agui/connect", json=body).status_code == 200
