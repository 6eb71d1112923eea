"""A native stream ends with ``done`` (issue 10): each status comes from a real run on a
real worker through Redis, relayed and replayed from the segment log, so that a client
can tell the end of a run from a dropped connection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from relayline.shared.texts import PROVIDER_FAILED
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, frames
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def web(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[WebServer]:
    tmp = tmp_path_factory.mktemp("done")
    with (
        redis_databases.database("done frame") as redis_url,
        running_stack(fresh_env(tmp, redis_url)) as (server, _workers),
    ):
        yield server


def _post(web: WebServer, path: str, body: Any) -> list[dict[str, Any]]:
    response = requests.post(web.url + path, json=body, timeout=60)
    assert response.status_code == 200, response.text
    return events_of(response.text)


def _run_id(web: WebServer, thread: str) -> str:
    run_id: str = requests.get(f"{web.url}/api/threads/{thread}", timeout=10).json()["run"]["runId"]
    return run_id


def _done(status: str, run_id: str) -> dict[str, Any]:
    return {"type": "done", "status": status, "runId": run_id}


def test_a_completed_turn_ends_with_done_completed_relayed_and_replayed(web: WebServer) -> None:
    events = _post(web, "/api/threads/d-ok/messages", {"content": "hello"})
    assert events[-1] == _done("completed", _run_id(web, "d-ok"))
    assert [e["type"] for e in events].count("done") == 1
    replay = requests.get(f"{web.url}/api/threads/d-ok/stream", timeout=30)
    assert events_of(replay.text) == events  # the segment log carries it like any event


def test_a_suspended_turn_ends_with_done_interrupted_then_its_continuation_completes(
    web: WebServer,
) -> None:
    first = _post(web, "/api/threads/d-wait/messages", {"content": "What is the title?"})
    run_id = _run_id(web, "d-wait")
    assert [e["type"] for e in first[-2:]] == ["interrupt", "done"]
    assert first[-1] == _done("interrupted", run_id)
    answer = {"call_t": {"result": "Home"}}
    second = _post(web, "/api/threads/d-wait/tool-results", answer)
    assert second[-1] == _done("completed", run_id)  # the same run, now finished


def test_an_approval_wait_ends_with_done_interrupted(web: WebServer) -> None:
    events = _post(web, "/api/threads/d-approve/messages", {"content": "Delete the report"})
    assert events[-2]["request"]["eventName"] == "approval"
    assert events[-1] == _done("interrupted", _run_id(web, "d-approve"))


def test_a_failed_turn_ends_with_its_error_then_done_failed(web: WebServer) -> None:
    events = _post(web, "/api/threads/d-fail/messages", {"content": "explode"})
    error = {"type": "error", "message": PROVIDER_FAILED, "code": "provider_error"}
    assert events[-2] == error  # the provider's own words ("the model fell over") stay out
    assert events[-1] == _done("failed", _run_id(web, "d-fail"))


def test_a_stopped_turn_ends_with_cancelled_then_done_cancelled(web: WebServer) -> None:
    live = requests.post(
        f"{web.url}/api/threads/d-stop/messages",
        json={"content": "tell me a story"},
        stream=True,
        timeout=60,
    )
    stream = frames(live)
    first = next(frame.event for frame in stream if frame.event["type"] == "text")
    assert first["content"]
    stopped = requests.post(f"{web.url}/api/threads/d-stop/cancel", timeout=10).json()
    assert stopped["stopped"] is True
    rest = [frame.event for frame in stream]
    assert rest[-2:] == [
        {"type": "cancelled", "reason": "user"},
        _done("cancelled", stopped["runId"]),
    ]
