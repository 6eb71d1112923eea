"""200 concurrent turns against ONE worker process on its default pool (gevent), each
with an approval and a frontend tool, over the native HTTP routes: every turn suspends
for its approval, then for its frontend tool, then completes with its own results, and
its stored history holds its own messages only; the approved backend tool ran once per
turn. This is what the gevent pool must keep true while many turns share the process's
store, Redis clients, agent spec and scripted provider."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = pytest.mark.integration

#: concurrent turns, and the bound on each request (a loaded 2-core machine)
TURNS = 200
REQUEST_TIMEOUT = 240


@dataclass(frozen=True)
class Turn:
    """What one client saw: the last event of each of its three requests, and the text
    of the answer that completed the turn."""

    thread: str
    approval: dict[str, Any]
    frontend: dict[str, Any]
    answer: str


@contextmanager
def one_worker(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[tuple[str, Worker]]:
    with redis_databases.database(f"many turns {tmp_path.name}") as redis_url:
        env = fresh_env(tmp_path, redis_url)
        worker = Worker(env, "many")  # the default pool and concurrency
        web: WebServer | None = None
        try:
            web = WebServer(env)
            yield web.url, worker
        finally:
            if web is not None:
                web.stop()
            worker.stop()


def _post(session: requests.Session, url: str, body: object) -> list[dict[str, Any]]:
    response = session.post(url, json=body, timeout=REQUEST_TIMEOUT)
    assert response.status_code == 200, response.text
    return events_of(response.text)


def _turn(base: str, thread: str) -> Turn:
    with requests.Session() as session:
        route = f"{base}/api/threads/{thread}"
        asked = _post(session, f"{route}/messages", {"content": f"delete it for {thread}"})
        approved = _post(session, f"{route}/approvals", {"call_d": "approve"})
        answered = _post(
            session, f"{route}/tool-results", {"call_t": {"result": f"title of {thread}"}}
        )
    # each suspended segment ends with its interrupt, then done
    assert [e["type"] for e in (asked[-1], approved[-1], answered[-1])] == ["done"] * 3
    return Turn(thread, asked[-2], approved[-2], text_of(answered))


@pytest.mark.timeout(REQUEST_TIMEOUT * 3 + 120)
def test_200_concurrent_turns_with_approvals_and_frontend_tools_on_one_worker(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with one_worker(tmp_path, redis_databases) as (base, worker):
        threads = [f"many-{index:03d}" for index in range(TURNS)]
        with ThreadPoolExecutor(max_workers=TURNS) as clients:
            turns = list(clients.map(lambda thread: _turn(base, thread), threads))
        # One process ran them all: the gevent pool forks no children.
        children = subprocess.run(
            ["pgrep", "-P", str(worker.process.pid)], capture_output=True, text=True
        ).stdout.split()
        assert children == []
        # Celery's banner names the pool: gevent, so the process was patched (an
        # unpatched one would have fallen back to the threads pool, "(thread)").
        assert "(gevent)" in worker.log.read_text()

    for turn in turns:
        assert turn.approval["type"] == "interrupt", turn
        assert [a["id"] for a in turn.approval["request"]["actions"]] == ["call_d"]
        assert turn.frontend["type"] == "interrupt", turn
        assert [c["name"] for c in turn.frontend["request"]["toolCalls"]] == ["read_title"]
        assert f"title of {turn.thread}" in turn.answer and "r.pdf deleted" in turn.answer
        assert turn.answer.count("title of ") == 1  # no other turn's result crossed in

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        for thread in threads:
            record = store.current_run(thread)
            assert record is not None and record.status == "completed", thread
            history = store.messages(thread)
            texts = " ".join(message.text for message in history)
            assert history[0].text == f"delete it for {thread}"
            assert texts.count("many-") == texts.count(thread), thread  # only its own
            results = [r for m in history for r in m.tool_results]
            # Each call settled once: the approved tool's result and the browser's.
            assert sorted(r.call_id for r in results) == ["call_d", "call_t"], thread
            settled = {r.call_id: r.content for r in results}
            assert thread in str(settled["call_t"]), thread
    finally:
        store.dispose()
    assert count(tmp_path, "tool.delete_file") == TURNS  # each approved tool ran once
    assert count(tmp_path, "model") == 2 * TURNS
