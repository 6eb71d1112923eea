"""A worker host cut off from the network mid-run, across real hosts (network namespaces
with their own addresses, hostnames and PID namespaces: tests.support.hosts).

Services (Redis as store and broker, PostgreSQL) on one host, worker A on another, the
web and later worker B on a third. A's run holds at its gate tool; A's host is cut off;
B's sweeper sees A's heartbeat lapse and recovers the run in a new stream. The client,
which had read the lost stream up to the gate, resumes with the cursor it had: it gets
the rest of the lost stream, the signal that the run goes on elsewhere, and from there
the recovered stream whole (issue 34, fault 12; before, the old position was applied
to the new stream and its first frames were skipped). The recovered answer differs from
what the lost attempt would have said (its tool was interrupted), so a splice shows."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from relayline.cli import web_command
from relayline.shared.persistence import Store
from tests.support.agents import count
from tests.support.hosts import HostProcess, Hosts, available, hosts, postgres_on, redis_on
from tests.support.sse import frames, text_of
from tests.support.stack import stack_env

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

#: short heartbeats: the takeover is what is tested, not the default timings
HEARTBEATS = {"RELAYLINE_HEARTBEAT_TTL": "3", "RELAYLINE_HEARTBEAT_INTERVAL": "1"}


@pytest.fixture
def cluster() -> Iterator[Hosts]:
    missing = available()
    if missing is not None:
        pytest.skip(f"no network namespaces here: {missing}")
    with hosts(["services", "worker-a", "web"]) as made:
        yield made


def _env(redis_url: str, database_url: str, counts: Path) -> dict[str, str]:
    return {**stack_env(redis_url, database_url, counts), **HEARTBEATS}


def _worker(cluster: Hosts, host: str, name: str, env: dict[str, str], logs: Path) -> HostProcess:
    argv = [sys.executable, "-m", "celery", "-A", "relayline.worker.app", "worker"]
    argv += ["-n", f"{name}@%h", "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
    worker = cluster.start(host, argv, env, logs / f"{name}.log", hostname=name)
    worker.wait_for_log(" ready.")
    return worker


@pytest.mark.timeout(180)
def test_a_cut_off_workers_run_is_taken_over_and_a_resume_gets_the_recovery_whole(
    cluster: Hosts, tmp_path: Path
) -> None:
    with (
        redis_on(cluster, "services", tmp_path) as redis_url,
        postgres_on(cluster, "services", tmp_path) as database_url,
    ):
        Store(database_url).dispose()  # migrated before any worker touches it
        env = _env(redis_url, database_url, tmp_path)
        _worker(cluster, "worker-a", "worker-a", env, tmp_path)
        web_address = cluster.hosts["web"].address
        web = cluster.start("web", web_command(web_address, 8000), env, tmp_path / "web.log")
        web.wait_for_log("Booting worker")
        url = f"http://{web_address}:8000"
        _until_healthy(url)

        live = requests.post(
            f"{url}/api/threads/across/messages",
            json={"content": "gated please"},
            stream=True,
            timeout=60,
        )
        held = []
        for frame in frames(live):
            held.append(frame)
            data = frame.event.get("data") or {}
            if frame.event["type"] == "activity" and data.get("status") == "running":
                break  # worker A holds the run at its gate tool
        deadline = time.monotonic() + 30
        while count(tmp_path, "gate.reached") == 0:  # the activity frame comes first
            assert time.monotonic() < deadline, "worker A never reached the gate"
            time.sleep(0.05)  # polling a counter file, bounded by the deadline
        cursor = held[-1].id
        assert cursor is not None
        lost_stream = cursor.split(":")[0]

        cluster.cut("worker-a")  # A lives on, but nothing of it gets out
        _worker(cluster, "web", "worker-b", env, tmp_path)
        store = Store(database_url, migrate=False)
        try:
            deadline = time.monotonic() + 60
            while (run := store.current_run("across")) is None or run.status != "completed":
                assert time.monotonic() < deadline, "the run was not taken over within 60 s"
                time.sleep(0.2)  # polling the stored run, bounded by the deadline
            assert run.attempt == 2
            answer = [m.text for m in store.messages("across") if m.role == "assistant"][-1]
        finally:
            store.dispose()
        live.close()  # the client's connection went with the lost stream

        told = list(frames(requests.get(
            f"{url}/api/threads/across/stream", headers={"Last-Event-ID": cursor}, timeout=30
        )))  # fmt: skip
        assert told[-1].event["code"] == "RUN_CONTINUES_ELSEWHERE"
        moved_to = told[-1].id
        assert moved_to is not None and moved_to.endswith(":-1")
        assert not moved_to.startswith(lost_stream)
        recovered = list(frames(requests.get(
            f"{url}/api/threads/across/stream", headers={"Last-Event-ID": moved_to}, timeout=30
        )))  # fmt: skip

    new_stream = moved_to.split(":")[0]
    # The recovered stream whole, from its first frame, and it is the stored answer.
    assert [f.id for f in recovered] == [f"{new_stream}:{n}" for n in range(len(recovered))]
    assert recovered[-1].event["type"] == "done"
    assert text_of([f.event for f in recovered]).endswith(answer)
    assert "After the gate" in answer and "opened" not in answer  # the gate was cut short


def _until_healthy(url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass  # not listening yet
        assert time.monotonic() < deadline, "the web host never answered"
        time.sleep(0.1)  # polling a starting server, bounded by the deadline
