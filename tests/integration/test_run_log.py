"""The run log (worker.runlog) of a real worker: one structured line per run
transition, with the thread, run, attempt, agent and duration, and none of what a
person wrote unless the worker logs at DEBUG."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.host_app import HostWorker
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, fresh_env

pytestmark = pytest.mark.integration

SECRET_WORDS = "my-bank-pin-is-4711"


@contextmanager
def stack(
    tmp_path: Path, redis_databases: RedisDatabases, loglevel: str, **env: str
) -> Iterator[tuple[WebServer, Path]]:
    with redis_databases.database(f"run log {tmp_path.name}") as redis_url:
        full = fresh_env(tmp_path, redis_url, **env)
        log = tmp_path / "worker.log"
        worker = HostWorker("relayline.worker.app", "celery", full, log, loglevel)
        try:
            web = WebServer(full)
            try:
                yield web, log
            finally:
                web.stop()
        finally:
            worker.stop()


def turn(web: WebServer, path: str, body: Any) -> list[dict[str, Any]]:
    response = requests.post(web.url + path, json=body, stream=True, timeout=60)
    assert response.status_code == 200, response.text
    return [
        json.loads(line[6:])
        for line in response.iter_lines(decode_unicode=True)
        if line and line.startswith("data: ")
    ]


def run_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for raw in log.read_text().splitlines():
        if raw.startswith("{"):
            parsed = json.loads(raw)
            if str(parsed.get("event", "")).startswith("run."):
                lines.append(parsed)
    return lines


def test_json_lines_per_transition_without_what_people_wrote(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with stack(tmp_path, redis_databases, "INFO", RELAYLINE_LOG_FORMAT="json") as (web, log):
        turn(web, "/api/threads/log-1/messages", {"content": f"hello {SECRET_WORDS}"})
        turn(web, "/api/threads/log-2/messages", {"content": "weather please"})
        turn(web, "/api/threads/log-3/messages", {"content": "the title?"})
        answer = {"call_t": {"result": f"Title {SECRET_WORDS}"}}
        turn(web, "/api/threads/log-3/tool-results", answer)
        run = requests.get(f"{web.url}/api/threads/log-3", timeout=10).json()["run"]
    lines = run_lines(log)
    by_thread: dict[str, list[str]] = {}
    for line in lines:
        by_thread.setdefault(line["thread_id"], []).append(line["event"])
    assert by_thread == {
        "log-1": ["run.started", "run.completed"],
        "log-2": ["run.started", "run.completed"],
        "log-3": ["run.started", "run.suspended", "run.resumed", "run.completed"],
    }
    for line in lines:
        assert line["level"] == "info" and line["logger"] == "relayline.runs"
        assert line["agent"] == "default" and line["task_id"]
        assert re.fullmatch(r"[0-9a-f]{32}|run_[0-9a-zA-Z_-]+|[0-9a-zA-Z_-]+", line["run_id"])
    ends = [line for line in lines if line["event"] in ("run.completed", "run.suspended")]
    assert all(line["duration_ms"] >= 0 and line["attempt"] >= 1 for line in ends)
    assert {line["status"] for line in ends} == {"completed", "suspended"}
    # The continuation names the attempt it continues; the run moved on to the next.
    third = [line for line in lines if line["thread_id"] == "log-3"]
    assert {line["run_id"] for line in third} == {run["runId"]}
    assert [line["attempt"] for line in third] == [None, 1, 1, run["attempt"]]
    assert run["attempt"] == 2
    text = log.read_text()
    assert SECRET_WORDS not in text  # neither the message nor the tool's answer
    assert "Oslo" not in text  # nor a tool's arguments


def test_debug_text_lines_carry_the_message(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with stack(tmp_path, redis_databases, "DEBUG") as (web, log):
        turn(web, "/api/threads/dbg-1/messages", {"content": f"hello {SECRET_WORDS}"})
    text = log.read_text()
    started = re.search(r"run\.started thread_id=dbg-1 run_id=\S+ attempt=None agent=default", text)
    assert started is not None, text[-3000:]
    assert re.search(
        r"run\.completed thread_id=dbg-1 run_id=\S+ attempt=1 agent=default task_id=\S+ "
        r"duration_ms=[0-9.]+ outcome=completed status=completed",
        text,
    ), text[-3000:]
    assert SECRET_WORDS in text  # asked for: the turn's text is in the start line
