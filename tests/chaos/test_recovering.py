"""A run whose worker is gone (SIGKILL of the whole worker mid-run) shows ``recovering``
on every status route until a recovery takes it over, and Stop works on it: the stop is
recorded, the recovery started by the next worker's sweeper ends the run ``cancelled``
without calling the model, and the thread takes the next turn."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import requests

from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.chaos import report, until
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import WebServer, Worker, fresh_env

#: short heartbeats: the lapse is seen in seconds (the defaults are tested in
#: test_worker_loss.py)
FAST_BEATS = {"RELAYLINE_HEARTBEAT_TTL": "2", "RELAYLINE_HEARTBEAT_INTERVAL": "0.5"}


def test_a_recovering_run_is_shown_and_stopped(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"recovering {tmp_path.name}") as redis_url:
        # The second model call kills the whole worker, once; the weather tool ran and
        # was checkpointed just before. No other worker is up: the recovery is pending.
        env = fresh_env(tmp_path, redis_url, RELAYLINE_TEST_KILL_WORKER_ON_CALL="2", **FAST_BEATS)
        workers = [Worker(env, "w0")]
        web = WebServer(env)
        store = Store(env["DATABASE_URL"])
        try:
            asked: list[str] = []

            def ask() -> None:
                try:
                    response = requests.post(
                        f"{web.url}/api/threads/rec-1/messages",
                        json={"content": "Weather please"},
                        timeout=90,
                    )
                except requests.RequestException as exc:  # the web stopped under it
                    asked.append(f"no answer: {exc}")
                    return
                asked.append(response.text)

            asking = threading.Thread(target=ask)
            asking.start()
            until(lambda: workers[0].process.poll() is not None, "the worker to be killed")
            assert count(tmp_path, "killed") == 1

            def thread_status() -> object:
                run = requests.get(f"{web.url}/api/threads/rec-1", timeout=10).json()["run"]
                return run["status"]

            until(lambda: thread_status() == "recovering", "the run to show recovering")
            reload = requests.get(f"{web.url}/agui/threads/rec-1", timeout=10).json()
            assert reload["status"] == "recovering"
            listed = requests.get(f"{web.url}/api/threads", timeout=10).json()["threads"]
            assert [(t["threadId"], t["status"]) for t in listed] == [("rec-1", "recovering")]
            record = store.current_run("rec-1")
            assert record is not None and record.status == "running"  # as stored

            stopped = requests.post(f"{web.url}/api/threads/rec-1/cancel", timeout=10).json()
            assert stopped["stopped"] is True
            assert stopped["status"] == "recovering"  # what the stop found

            workers.append(Worker(env, "w1"))  # its sweeper enqueues the recovery
            ready = time.monotonic()
            until(
                lambda: (r := store.current_run("rec-1")) is not None and r.status == "cancelled",
                "the recovered run to end cancelled",
            )
            report(
                f"stop of a recovering run (only worker SIGKILLed): cancelled "
                f"{time.monotonic() - ready:.1f}s after a worker was back, model calls after "
                f"the loss={count(tmp_path, 'model') - 1}"
            )
            asking.join(timeout=90)
            assert asked, "the first client got no answer"
            assert count(tmp_path, "model") == 1  # the recovery never called the model
            assert count(tmp_path, "tool.weather") == 1
            assert thread_status() == "cancelled"

            after = requests.post(
                f"{web.url}/api/threads/rec-1/messages", json={"content": "hello"}, timeout=60
            )
            assert after.status_code == 200
            assert text_of(events_of(after.text)) == "Hello! hello"
        finally:
            store.dispose()
            web.stop()
            for worker in workers:
                worker.stop()
