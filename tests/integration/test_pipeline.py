"""The whole pipeline: the web app relaying real Celery workers through real Redis, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.database_stacks import stack_on_database
from tests.support.redis_server import RedisDatabases
from tests.support.stack import (
    WebServer,
    Worker,
    fresh_env,
    running_stack,
)

pytestmark = pytest.mark.integration


class Stack:
    def __init__(self, web: WebServer, workers: list[Worker], counts: Path, database_url: str):
        self.web = web
        self.workers = workers
        self.counts = counts
        self.database_url = database_url

    def post(self, path: str, body: Any, **options: Any) -> requests.Response:
        return requests.post(self.web.url + path, json=body, timeout=60, **options)

    def sse(self, path: str, body: Any) -> list[dict[str, Any]]:
        """POST and read the SSE response to its end: the events as JSON objects."""
        response = self.post(path, body, stream=True)
        assert response.status_code == 200, response.text
        assert response.headers["Cache-Control"] == "no-cache"
        assert response.headers["X-Accel-Buffering"] == "no"
        events = []
        for line in response.iter_lines(decode_unicode=True):
            if line and line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
        return events

    def get(self, path: str) -> requests.Response:
        return requests.get(self.web.url + path, timeout=30)

    def wait_for_run(self, thread: str, status: str, timeout: float = 30.0) -> dict[str, Any]:
        """Poll the thread until its run reaches ``status`` (bounded by ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            run: dict[str, Any] = self.get(f"/api/threads/{thread}").json()["run"]
            if run["status"] == status or time.monotonic() > deadline:
                return run
            time.sleep(0.05)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
) -> Iterator[Stack]:
    with stack_on_database(request, tmp_path_factory, redis_databases, "pipeline stack") as on:
        yield Stack(on.web, on.workers, on.counts, on.database_url)


@contextmanager
def own_stack(
    tmp_path: Path,
    redis_databases: RedisDatabases,
    workers: int = 1,
    **env: str,
) -> Iterator[Stack]:
    """A stack of its own (for tests that change the workers' environment), on a Redis
    database apart from the module's stack."""
    with redis_databases.database(f"pipeline own stack {tmp_path.name}") as redis_url:
        full_env = fresh_env(tmp_path, redis_url, **env)
        with running_stack(full_env, workers=workers) as (web, started):
            yield Stack(web, started, tmp_path, full_env["DATABASE_URL"])


def agui_body(thread: str, run: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **extra,
    }


def test_native_plain_turn(stack: Stack) -> None:
    events = stack.sse("/api/threads/n-1/messages", {"content": "hello"})
    text = "".join(e["content"] for e in events if e["type"] == "text")
    assert text == "Hello! hello"
    thread = stack.get("/api/threads/n-1").json()
    assert thread["run"]["status"] == "completed"


def test_agui_approval_then_frontend_tool(stack: Stack) -> None:
    model_before = count(stack.counts, "model")
    user = {"id": "u-a1", "role": "user", "content": "Delete the report"}
    first = stack.sse("/agui", agui_body("a-1", "r1", [user]))
    assert first[0]["type"] == "RUN_STARTED"
    assert first[-1]["type"] == "RUN_FINISHED"
    interrupts = first[-1]["outcome"]["interrupts"]
    assert [i["id"] for i in interrupts] == ["call_d"]
    assert not any(e["type"] == "TOOL_CALL_START" for e in first)

    resume = [{"interruptId": "call_d", "status": "resolved", "payload": {"approved": True}}]
    second = stack.sse("/agui", agui_body("a-1", "r2", [user], resume=resume))
    started = [e["toolCallId"] for e in second if e["type"] == "TOOL_CALL_START"]
    assert started == ["call_d", "call_t"]  # the executed local call, then the handoff
    assert second[-1] == {"type": "RUN_FINISHED", "threadId": "a-1", "runId": "r2"}

    answer = {"id": "t-1", "role": "tool", "toolCallId": "call_t", "content": "Page"}
    third = stack.sse("/agui", agui_body("a-1", "r3", [user, answer]))
    text = "".join(e.get("delta", "") for e in third if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == 'Finished: {"call_d":"r.pdf deleted","call_t":"Page"}'
    assert count(stack.counts, "model") - model_before == 2
    reload = stack.get("/agui/threads/a-1").json()
    assert reload["status"] is None and reload["interrupts"] == []


def test_vercel_backend_tool_turn(stack: Stack) -> None:
    body = {
        "id": "v-1",
        "trigger": "submit-message",
        "messages": [
            {"id": "u-v1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]}
        ],
    }
    response = stack.post("/api/chat", body, stream=True)
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    events = [
        json.loads(line[6:])
        for line in response.iter_lines(decode_unicode=True)
        if line.startswith("data: ")
    ]
    text = "".join(e["delta"] for e in events if e["type"] == "text-delta")
    assert text == "Weather: sunny in Oslo"
    assert events[-1]["type"] == "finish"
    stored = stack.get("/api/chat/v-1").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]


def test_refusals_come_before_any_header(stack: Stack) -> None:
    user = {"id": "u-e1", "role": "user", "content": "What is the title?"}
    stack.sse("/agui", agui_body("e-1", "r1", [user]))  # suspends on the frontend call
    busy = stack.post(
        "/agui", agui_body("e-1", "r2", [user, {"id": "u-e2", "role": "user", "content": "hi"}])
    )
    assert busy.status_code == 409 and busy.json()["type"] == "RunInFlightError"
    forged = stack.post("/api/threads/e-1/tool-results", {"call_zz": {"result": "x"}})
    assert forged.status_code == 409 and "does not belong" in forged.json()["error"]
    answer = {"id": "t-e1", "role": "tool", "toolCallId": "call_t", "content": "One"}
    stack.sse("/agui", agui_body("e-1", "r3", [user, answer]))
    late = stack.post("/agui", agui_body("e-1", "r4", [user, answer]))
    assert late.status_code == 409  # the run exists and ended: the refusal says so
    run_id = stack.get("/api/threads/e-1").json()["run"]["runId"]
    assert late.json() == {
        "error": f"Run '{run_id}' is completed: there is no current interruption to answer.",
        "type": "RunNotWaitingError",
        "code": "RUN_NOT_WAITING",
        "runId": run_id,
        "status": "completed",
    }
    assert stack.post("/agui", {"threadId": "bad id!", "messages": []}).status_code == 400
    assert stack.get("/agui/threads/nobody-here").status_code == 404
    malformed = requests.post(
        stack.web.url + "/api/chat",
        data="{nope",
        timeout=10,
        headers={"Content-Type": "application/json"},
    )
    assert malformed.status_code == 400
    huge = stack.post("/api/threads/e-2/messages", {"content": "x" * (2 * 1024 * 1024)})
    assert huge.status_code == 413


def test_frontend_wait_deadline_is_settled_by_a_scheduled_task(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with own_stack(tmp_path, redis_databases, RELAYLINE_TEST_WAIT_TIMEOUT="1") as stack:
        events = stack.sse("/api/threads/x-1/messages", {"content": "What is the title?"})
        assert events[-2]["type"] == "interrupt" and events[-1]["status"] == "interrupted", events
        assert events[-2]["request"]["expiresAt"] is not None
        run = stack.wait_for_run("x-1", "completed")
        assert run["status"] == "completed"
        late = stack.post("/api/threads/x-1/tool-results", {"call_t": {"result": "late"}})
        assert late.status_code == 409  # the timeout answered it: the run moved on
        assert (late.json()["code"], late.json()["status"]) == ("RUN_NOT_WAITING", "completed")
        store = Store(stack.database_url)
        try:
            assert (
                store.messages("x-1")[-1].text == "The title is External tool execution timed out.."
            )
        finally:
            store.dispose()


def test_two_workers_serve_turns_of_different_threads_at_once(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    """Each turn's tool waits for the other turn's tool: both finish only in parallel."""
    import concurrent.futures

    with (
        own_stack(tmp_path, redis_databases, workers=2) as stack,
        concurrent.futures.ThreadPoolExecutor(2) as pool,
    ):
        turns = [
            pool.submit(stack.sse, f"/api/threads/{t}/messages", {"content": "meet a after b"})
            for t in ("p-1", "p-2")
        ]
        results = [turn.result(timeout=60) for turn in turns]
    for events in results:
        text = "".join(e["content"] for e in events if e["type"] == "text")
        assert text == "Met: together"
    assert count(tmp_path, "meet.a") == 1 and count(tmp_path, "meet.b") == 1


def test_a_client_that_disconnects_stops_only_the_relay(stack: Stack) -> None:
    response = stack.post("/api/threads/d-1/messages", {"content": "slow please"}, stream=True)
    lines = response.iter_lines(decode_unicode=True)
    first_text = next(line for line in lines if line.startswith("data: ") and '"text"' in line)
    assert first_text
    response.close()  # the browser tab went away mid-answer
    run = stack.wait_for_run("d-1", "completed")
    assert run["status"] == "completed"
    history = stack.get("/api/chat/d-1").json()["messages"]
    text = "".join(p["text"] for p in history[-1]["parts"] if p["type"] == "text")
    assert text == "One slow answer. " * 12


def test_heartbeats_keep_a_silent_relay_alive(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database("pipeline heartbeats stack") as redis_url:
        env = fresh_env(tmp_path, redis_url)
        worker = Worker(env, "hb")
        web = WebServer(env, {"RELAYLINE_HEARTBEAT_SECONDS": 0.1})
        try:
            response = requests.post(
                web.url + "/api/threads/h-1/messages",
                json={"content": "pause please"},
                stream=True,
                timeout=30,
            )
            lines = list(response.iter_lines(decode_unicode=True))
        finally:
            web.stop()
            worker.stop()
    # The model is silent for 0.7 s: comment heartbeats fill the gap, then the answer.
    assert lines.count(": keep-alive") >= 2
    text = "".join(
        json.loads(line[6:])["content"]
        for line in lines
        if line.startswith("data: ") and '"type":"text"' in line
    )
    assert text == "Back after a pause."
