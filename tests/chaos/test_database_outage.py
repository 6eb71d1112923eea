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
    """A new turn, an approval, a thread's state and the thread list, each a route that
    reads or writes the database."""
    return {
        "new turn": requests.post(
            f"{url}/api/threads/new-1/messages", json={"content": "hello"}, timeout=30
        ),
        "approval": requests.post(
            f"{url}/api/threads/erase-1/approvals", json={"call_e": "approve"}, timeout=30
        ),
        "thread": requests.get(f"{url}/api/threads/erase-1", timeout=30),
        "thread list": requests.get(f"{url}/api/threads", timeout=30),
    }


def test_database_down_is_503_and_a_finished_tool_keeps_its_result(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    from tests.chaos.test_dependency_failures import Asking

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
            # The refused requests changed nothing: the turn never started, and the
            # approval is still awaited and is taken now.
            assert requests.get(f"{web.url}/api/threads/new-1", timeout=30).status_code == 404
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
