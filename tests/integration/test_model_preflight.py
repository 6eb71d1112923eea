"""The model preflight (issue 32) against a base URL nobody listens at, with pydantic-ai's
OpenAI model (RELAYLINE_MODEL=openai:...): ``relayline web`` prints one line naming the
variable to set and starts anyway, a worker logs it as a warning when it is ready,
``/readyz`` reports it (still ready), and a turn fails with ``provider_unreachable``
saying the same, at once (a refused connection, no timeout)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.model_wire import API_KEY
from tests.support.orphan_guard import guarded
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of
from tests.support.stack import ROOT, WebServer, Worker, fresh_env, running_stack

pytestmark = pytest.mark.integration

MODEL = "openai:gpt-relayline-test"


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A port bound and never listening: connections to it are refused, and nobody else
    can take it while the module runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def offline_env(closed_port: int) -> Iterator[dict[str, str]]:
    """The model settings, for the workers and for this process (the web builds the agent
    with them too)."""
    model = {
        "RELAYLINE_MODEL": MODEL,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port}/v1",
        "OPENAI_API_KEY": API_KEY,
        "RELAYLINE_AGENT": "tests.support.failure_agents:configured",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in model.items():
            patch.setenv(name, value)
        yield model


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    offline_env: dict[str, str],
) -> Iterator[tuple[WebServer, Worker, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("preflight")
    with redis_databases.database("model preflight") as redis_url:
        env = fresh_env(tmp, redis_url, **offline_env)
        with running_stack(env) as (web, workers):
            yield web, workers[0], env


def expected(port: int) -> str:
    return (
        f"The model provider for '{MODEL}' at http://127.0.0.1:{port}/v1 cannot be reached "
        f"(connection refused at 127.0.0.1:{port}): start it, or set OPENAI_BASE_URL to "
        "where it listens."
    )


def until(check: Any, what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.05)  # polling a condition, bounded by the deadline


def test_a_worker_warns_once_when_it_is_ready(
    stack: tuple[WebServer, Worker, dict[str, str]], closed_port: int
) -> None:
    _, worker, _ = stack
    line = f"model check: agent 'default': {expected(closed_port)} [provider_unreachable]"

    def warned() -> list[str]:
        return [text for text in worker.log.read_text().splitlines() if line in text]

    [found] = until(warned, "the worker's model check line")
    assert "WARNING" in found


def test_readyz_reports_the_problem_and_stays_ready(
    stack: tuple[WebServer, Worker, dict[str, str]], closed_port: int
) -> None:
    web, _, _ = stack
    answer = requests.get(f"{web.url}/readyz", timeout=30)
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "ready"
    assert body["model"] == {
        "status": "warning",
        "problems": [
            {"agent": "default", "code": "provider_unreachable", "message": expected(closed_port)}
        ],
    }


def test_a_turn_fails_at_once_with_provider_unreachable(
    stack: tuple[WebServer, Worker, dict[str, str]], closed_port: int
) -> None:
    web, worker, _ = stack
    began = time.monotonic()
    response = requests.post(
        f"{web.url}/api/threads/offline/messages", json={"content": "Hello"}, timeout=60
    )
    assert time.monotonic() - began < 30  # a refused connection: no timeout waited for
    events = events_of(response.text)
    error, done = events[-2:]
    assert error == {
        "type": "error",
        "message": expected(closed_port),
        "code": "provider_unreachable",
    }
    assert done["type"] == "done" and done["status"] == "failed"
    run = requests.get(f"{web.url}/api/threads/offline", timeout=10).json()["run"]
    assert run["error"] == {"code": "provider_unreachable", "message": expected(closed_port)}

    def failed_line() -> list[str]:
        return [
            text
            for text in worker.log.read_text().splitlines()
            if f"run_id={run['runId']} " in text and "reason=provider_unreachable" in text
        ]

    [line] = until(failed_line, "the run's failure line")
    assert "WARNING" in line and "run.failed" in line and API_KEY not in line


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_relayline_web_prints_what_to_set_and_starts_anyway(
    stack: tuple[WebServer, Worker, dict[str, str]], closed_port: int
) -> None:
    _, _, env = stack
    port = free_port()
    process = subprocess.Popen(
        guarded([sys.executable, "-m", "relayline.cli", "web", "--port", str(port)]),
        cwd=ROOT,
        env={**env, "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(process.stderr or ()), daemon=True
    )  # stderr to its end: gunicorn writes there too
    reader.start()
    try:
        warning = (
            f"relayline warning: agent 'default': {expected(closed_port)} [provider_unreachable]\n"
        )
        until(lambda: warning in lines, "the warning on stderr")
        assert lines.index(warning) == 0  # before anything starts

        def serving() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok
            except requests.RequestException:  # not listening yet, or still loading
                return False

        until(serving, "the web server answering", timeout=60)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
