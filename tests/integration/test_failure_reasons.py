"""A failed run says why (issue 32), through a real Celery worker: the provider refusing the
key, a model the server does not serve, a tool that raises, an agent that does not load.
Each reaches the thread's owner in the protocol's error frame (AG-UI ``RUN_ERROR``
message and code, Vercel ``error`` part, native ``error``), in ``GET /api/threads/<id>``
as ``run.error``, and the operator in one WARNING line of the worker's log with the run
id and the reason; the API key appears in none of them.

The model is real wire: the default agent (``tests.support.failure_agents:configured``)
uses the model RELAYLINE_MODEL names, pointed with OPENAI_BASE_URL at a local server
answering in OpenAI's documented format (tests.support.model_wire)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.model_wire import API_KEY, ModelWire, Reply, openai_stream
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of
from tests.support.stack import WebServer, Worker, fresh_env, running_stack
from tests.support.turn_bodies import new_turn

pytestmark = pytest.mark.integration

MODEL = "gpt-relayline-test"


@pytest.fixture(scope="module")
def wire() -> Iterator[ModelWire]:
    server = ModelWire().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model_env(wire: ModelWire) -> Iterator[dict[str, str]]:
    """The model settings, for the workers and for this process (the web builds the agent
    too: it reads RELAYLINE_MODEL from the environment, as any agent factory would)."""
    model = {
        "RELAYLINE_MODEL": MODEL,  # a bare name: the OpenAI-compatible provider
        "OPENAI_BASE_URL": f"{wire.url}/v1",
        "OPENAI_API_KEY": API_KEY,
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in model.items():
            patch.setenv(name, value)
        yield model


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    model_env: dict[str, str],
) -> Iterator[tuple[WebServer, Worker]]:
    tmp = tmp_path_factory.mktemp("failures")
    agent = {"RELAYLINE_AGENT": "tests.support.failure_agents:configured"}
    with (
        redis_databases.database("failure reasons") as redis_url,
        running_stack(fresh_env(tmp, redis_url, **model_env, **agent)) as (web, workers),
    ):
        yield web, workers[0]


def turn(web: WebServer, protocol: str, thread: str, text: str) -> list[dict[str, Any]]:
    """Post a new turn in ``protocol``; the events of its whole answer."""
    path, body = new_turn(protocol, thread, text)
    response = requests.post(web.url + path, json=body, timeout=60)
    assert response.status_code == 200, response.text
    return events_of(response.text)


def error_frame(protocol: str, events: list[dict[str, Any]]) -> tuple[str, str | None]:
    """The message and code of the answer's error frame (Vercel's carries no code)."""
    if protocol == "agui":
        [error] = [e for e in events if e["type"] == "RUN_ERROR"]
        assert events[-1] == error
        return error["message"], error["code"]
    [error] = [e for e in events if e["type"] == "error"]
    if protocol == "vercel":
        assert events[-1] == error and set(error) == {"type", "errorText"}
        return error["errorText"], None
    assert events[-1] == {"type": "done", "status": "failed", "runId": events[-1]["runId"]}
    return error["message"], error["code"]


def failed_run(web: WebServer, thread: str) -> dict[str, Any]:
    answer = requests.get(f"{web.url}/api/threads/{thread}", timeout=10)
    assert answer.status_code == 200, answer.text
    run: dict[str, Any] = answer.json()["run"]
    assert run["status"] == "failed"
    return run


def warning_line(worker: Worker, run_id: str, timeout: float = 20.0) -> str:
    """The worker's WARNING line about ``run_id``'s failure (the end line comes after the
    client's last frame, so it is waited for)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            line
            for line in worker.log.read_text().splitlines()
            if "WARNING" in line and f"run_id={run_id} " in line and "reason=" in line
        ]
        if found:
            assert len(found) == 1, found  # one line per failure
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no WARNING line for {run_id}: {worker.log.read_text()[-3000:]}")
        time.sleep(0.05)  # polling a log file, bounded by the deadline


def check_everywhere(
    web: WebServer,
    worker: Worker,
    protocol: str,
    thread: str,
    events: list[dict[str, Any]],
    code: str,
    message: str,
) -> str:
    """The reason in the frame, the thread API and the worker's log; the key in none."""
    said, said_code = error_frame(protocol, events)
    assert said == message
    assert said_code == (None if protocol == "vercel" else code)
    run = failed_run(web, thread)
    assert run["error"] == {"code": code, "message": message}
    line = warning_line(worker, run["runId"])
    assert f"reason={code} " in line and "run.failed" in line
    assert f"thread_id={thread} " in line
    for text in (str(events), str(run), line):
        assert API_KEY not in text
    return line


@pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
def test_a_refused_key_says_provider_auth_and_what_to_set(
    stack: tuple[WebServer, Worker], wire: ModelWire, protocol: str
) -> None:
    web, worker = stack
    body = (
        '{"error": {"message": "Incorrect API key provided: ' + API_KEY + '.", '
        '"type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}'
    )
    wire.answer_with(Reply([], status=401, body=body))
    thread = f"auth-{protocol}"
    events = turn(web, protocol, thread, "Hello")
    message = (
        f"The model provider at {wire.url}/v1 refused the API key (HTTP 401): set "
        "OPENAI_API_KEY to a valid key."
    )
    line = check_everywhere(web, worker, protocol, thread, events, "provider_auth", message)
    assert "HTTP 401" in line and "Incorrect API key provided: ***" in line  # the detail


def test_a_model_the_server_does_not_serve_says_model_not_found(
    stack: tuple[WebServer, Worker], wire: ModelWire
) -> None:
    web, worker = stack
    body = (
        '{"error": {"message": "The model `' + MODEL + "` does not exist or you do not have "
        'access to it.", "type": "invalid_request_error", "param": null, '
        '"code": "model_not_found"}}'
    )
    wire.answer_with(Reply([], status=404, body=body))
    events = turn(web, "native", "model-404", "Hello")
    message = (
        f"The model provider at {wire.url}/v1 does not serve the model '{MODEL}' (HTTP 404): "
        "set RELAYLINE_MODEL to a model it serves."
    )
    check_everywhere(web, worker, "native", "model-404", events, "model_not_found", message)


def test_a_tool_that_raises_says_tool_failed(
    stack: tuple[WebServer, Worker], wire: ModelWire
) -> None:
    web, worker = stack
    call = ("call_pay", "charge_card", ['{"amount"', ": 500}"])
    wire.answer_with(Reply(openai_stream(tool_calls=[call])))
    events = turn(web, "native", "tool-crash", "Charge 5 euros")
    message = (
        "The tool 'charge_card' failed: RuntimeError: the payment service refused the charge "
        "(token ***)"
    )
    # the call's error result reaches the client first, then the run's error
    [result] = [e for e in events if e["type"] == "tool-result"]
    assert "call_pay" in str(result) and "sk-live" not in str(result)
    check_everywhere(web, worker, "native", "tool-crash", events, "tool_failed", message)
    assert "sk-live" not in worker.log.read_text()


# an agent that does not load ------------------------------------------------------------

BROKEN = "tests.support.broken_agent:spec"
UNAVAILABLE = (
    f"The agent 'default' cannot be loaded from RELAYLINE_AGENT ({BROKEN}): Cannot import agent "
    "module 'tests.support.broken_agent': No module named 'an_sdk_nobody_installed'. Fix "
    "RELAYLINE_AGENT or the agent's module."
)


@pytest.fixture(scope="module")
def broken_worker(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    model_env: dict[str, str],
) -> Iterator[tuple[WebServer, Worker]]:
    """A worker whose RELAYLINE_AGENT does not import, behind a web whose agent loads."""
    tmp = tmp_path_factory.mktemp("broken")
    with redis_databases.database("broken agent") as redis_url:
        env = fresh_env(
            tmp, redis_url, **model_env, RELAYLINE_AGENT="tests.support.failure_agents:configured"
        )
        worker = Worker({**env, "RELAYLINE_AGENT": BROKEN}, "broken")
        try:
            web = WebServer(env)
            try:
                yield web, worker
            finally:
                web.stop()
        finally:
            worker.stop()


@pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
def test_an_agent_that_does_not_load_says_agent_unavailable_at_once(
    broken_worker: tuple[WebServer, Worker], protocol: str
) -> None:
    web, worker = broken_worker
    thread = f"broken-{protocol}"
    began = time.monotonic()
    events = turn(web, protocol, thread, "Hello")
    # promptly: not after the relay's silence timeout (300 s)
    assert time.monotonic() - began < 30
    line = check_everywhere(web, worker, protocol, thread, events, "agent_unavailable", UNAVAILABLE)
    assert "outcome=failed" in line
    # the turn is a failed run in history like any other: the person's message is kept
    history = requests.get(f"{web.url}/agui/threads/{thread}", timeout=10).json()
    assert [m["content"] for m in history["messages"]] == ["Hello"]
    assert history["status"] == "failed"


def test_a_web_whose_agent_does_not_load_refuses_with_503_and_still_shows_threads(
    tmp_path: Path,
    redis_url: str,
    broken_worker: tuple[WebServer, Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    web, _ = broken_worker
    turn(web, "native", "shown-later", "Hello")  # a thread with a failed run
    env = {**fresh_env(tmp_path, redis_url), "RELAYLINE_AGENT": BROKEN}
    env["DATABASE_URL"] = web.app.extensions["relayline"].settings.database_url
    broken_web = WebServer(env)
    try:
        refused = requests.post(
            f"{broken_web.url}/api/threads/t-503/messages", json={"content": "Hi"}, timeout=10
        )
        assert refused.status_code == 503
        assert refused.json() == {"error": UNAVAILABLE, "type": "AgentUnavailableError"}
        assert refused.headers["Retry-After"] == "30"
        [line] = [
            r.getMessage()
            for r in caplog.records
            if r.name == "relayline.web" and r.levelname == "WARNING"
        ]  # the operator's one line
        assert "POST /api/threads/t-503/messages -> 503 AgentUnavailableError" in line
        assert "reason=agent_unavailable" in line and "an_sdk_nobody_installed" in line
        shown = requests.get(f"{broken_web.url}/api/threads/shown-later", timeout=10)
        assert shown.status_code == 200
        assert shown.json()["run"]["error"]["code"] == "agent_unavailable"
        ready = requests.get(f"{broken_web.url}/readyz", timeout=30).json()
        assert ready["model"] == {
            "status": "warning",
            "problems": [{"agent": "default", "code": "agent_unavailable", "message": UNAVAILABLE}],
        }
    finally:
        broken_web.stop()
