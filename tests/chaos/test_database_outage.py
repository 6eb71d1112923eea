"""PostgreSQL down under a real web and worker (a throwaway cluster of this test's own,
stopped and started by ``pg_ctl``; never the machine's shared server): every route that
needs the database answers 503 with ``Retry-After`` and ``code: database_unavailable``,
and a tool that completes while the server is down keeps its result. The worker writes
it once the server is back; the model reads the tool's real result, never "the tool was
interrupted", and the tool ran once."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from relayline.shared.agent.loop import INTERRUPTED_ERROR
from relayline.shared.persistence import Store
from tests.chaos.test_dependency_failures import Asking
from tests.support.agents import count
from tests.support.chaos import report, until
from tests.support.pg_cluster import pg_cluster
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import running_stack, stack_env

FAST_BEATS = {"RELAYLINE_HEARTBEAT_TTL": "2", "RELAYLINE_HEARTBEAT_INTERVAL": "0.5"}
GATED_ANSWER = "After the gate: opened"
#: how long the server stays down: several heartbeat lives (FAST_BEATS), so a sweeper
#: that took the retrying worker for lost would have recovered the run meanwhile
OUTAGE_SECONDS = 8.0


def _asks_during_outage(url: str) -> dict[str, requests.Response]:
    """A request of every kind that reads or writes the database: new turns of the three
    protocols, an approval, a stop, a deletion, a thread's state, history and stream,
    and the thread list."""
    user = {"id": "u-o1", "role": "user", "content": "hello"}
    agui = {
        "threadId": "agui-1",
        "runId": "r1",
        "state": {},
        "messages": [user],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    vercel = {
        "id": "vercel-1",
        "trigger": "submit-message",
        "messages": [{"id": "u-v1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    }
    ask = requests.Session()
    wait = 30  # seconds: a refusal is immediate; a hang fails the test
    return {
        "native turn": ask.post(
            f"{url}/api/threads/new-1/messages", json={"content": "hello"}, timeout=wait
        ),
        "AG-UI turn": ask.post(f"{url}/agui", json=agui, timeout=wait),
        "Vercel turn": ask.post(f"{url}/api/chat", json=vercel, timeout=wait),
        "approval": ask.post(
            f"{url}/api/threads/erase-1/approvals", json={"call_e": "approve"}, timeout=wait
        ),
        "stop": ask.post(f"{url}/api/threads/erase-1/cancel", json={}, timeout=wait),
        "deletion": ask.delete(f"{url}/api/threads/erase-1", timeout=wait),
        "thread": ask.get(f"{url}/api/threads/erase-1", timeout=wait),
        "AG-UI history": ask.get(f"{url}/agui/threads/erase-1", timeout=wait),
        "Vercel history": ask.get(f"{url}/api/chat/erase-1", timeout=wait),
        "stream": ask.get(f"{url}/api/threads/erase-1/stream", timeout=wait),
        "thread list": ask.get(f"{url}/api/threads", timeout=wait),
    }


def test_database_down_is_503_and_a_finished_tool_keeps_its_result(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        pg_cluster() as cluster,
        redis_databases.database(f"pg outage {tmp_path.name}") as redis_url,
    ):
        Store(cluster.url).dispose()  # migrated before the worker starts
        env = {**stack_env(redis_url, cluster.url, tmp_path), **FAST_BEATS}
        with running_stack(env) as (web, workers):
            suspended = requests.post(
                f"{web.url}/api/threads/erase-1/messages", json={"content": "erase"}, timeout=60
            )
            assert "interrupt" in suspended.text, suspended.text  # waits for its approval
            asking = Asking(web.url, "gated-1", "gated")
            until(lambda: count(tmp_path, "gate.reached") == 1, "the tool to start")

            cluster.stop()  # every connection of the web and the worker is cut
            down_at = time.monotonic()
            (tmp_path / "gate.open").touch()  # the tool completes with the server down
            until(
                lambda: "the database is unreachable" in workers[0].log.read_text(),
                "the worker to retry the tool's result",
            )
            answers = _asks_during_outage(web.url)
            for name, answer in answers.items():
                assert answer.status_code == 503, (name, answer.status_code, answer.text)
                assert int(answer.headers["Retry-After"]) > 0, name
                body = answer.json()
                assert body["code"] == "database_unavailable", (name, body)
                assert body["type"] == "DatabaseUnavailableError", (name, body)
            while time.monotonic() - down_at < OUTAGE_SECONDS:  # the outage lasts
                late = requests.get(f"{web.url}/api/threads/erase-1", timeout=30)
                assert late.status_code == 503, late.text
            cluster.start()
            outage = time.monotonic() - down_at

            text = text_of(events_of(asking.ended()))
            assert text.endswith(GATED_ANSWER), text
            assert INTERRUPTED_ERROR not in text
            assert count(tmp_path, "gate.reached") == 1  # never run twice
            store = Store(cluster.url)
            try:
                history = store.messages("gated-1")
                run = store.current_run("gated-1")
            finally:
                store.dispose()
            assert run is not None and run.status == "completed"
            assert history[-1].text == GATED_ANSWER
            tool_results = [m for m in history if m.role == "tool"]
            assert INTERRUPTED_ERROR not in str([m.content_json() for m in tool_results])
            # The refused requests changed nothing: no turn started, the thread was not
            # deleted nor its run stopped, and the approval is still awaited.
            for thread_id in ("new-1", "agui-1", "vercel-1"):
                gone = requests.get(f"{web.url}/api/threads/{thread_id}", timeout=30)
                assert gone.status_code == 404, (thread_id, gone.text)
            approved = requests.post(
                f"{web.url}/api/threads/erase-1/approvals", json={"call_e": "approve"}, timeout=60
            )
            assert approved.status_code == 200, approved.text
            assert "Erased:" in text_of(events_of(approved.text))
            report(
                f"PostgreSQL down {outage:.1f}s mid-tool: 503 + Retry-After on "
                f"{len(answers)}/{len(answers)} routes asked, tool result kept "
                f"(executions/tool={count(tmp_path, 'gate.reached')}, no interrupted result)"
            )
