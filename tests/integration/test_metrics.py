"""Prometheus metrics with a real worker and the web app: after a completed turn with a
tool, a stopped turn and a failed one, the worker's port and the web's ``/metrics``
count each (runs by outcome, model calls, tool executions, relayed streams and events,
time to first event); ``/metrics`` is a 404 unless enabled."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from relayline.shared.settings import Settings
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import free_port
from tests.support.sse import frames
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = pytest.mark.integration


def sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from Prometheus' text format (0 when absent)."""
    shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = (
        rf"^{re.escape(name)}(?:\{{{re.escape(shown)}\}})? ([0-9.e+-]+)$"
        if shown
        else (rf"^{re.escape(name)} ([0-9.e+-]+)$")
    )
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@pytest.fixture
def stack(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[tuple[WebServer, str]]:
    port = free_port()
    with redis_databases.database(f"metrics {tmp_path.name}") as redis_url:
        env = fresh_env(
            tmp_path, redis_url, RELAYLINE_METRICS="1", RELAYLINE_METRICS_PORT=str(port)
        )
        worker = Worker(env, "metered")
        web = WebServer(env)
        try:
            yield web, f"http://127.0.0.1:{port}/metrics"
        finally:
            web.stop()
            worker.stop()


def test_a_turn_a_stop_and_a_failure_are_each_counted(stack: tuple[WebServer, str]) -> None:
    web, worker_metrics = stack
    done = requests.post(f"{web.url}/api/threads/m-1/messages", json={"content": "weather"})
    assert done.status_code == 200
    live = requests.post(
        f"{web.url}/api/threads/m-2/messages", json={"content": "a story"}, stream=True
    )
    stream = frames(live)
    next(f for f in stream if f.event["type"] == "text")
    assert requests.post(f"{web.url}/api/threads/m-2/cancel", timeout=10).json()["stopped"]
    assert [f.event["type"] for f in stream][-2:] == ["cancelled", "done"]
    failed = requests.post(f"{web.url}/api/threads/m-3/messages", json={"content": "explode"})
    assert '"error"' in failed.text

    # The worker counts a task's end after its stream's terminal went out: wait for it.
    worker = _scrape_until(
        worker_metrics,
        lambda text: all(
            sample(text, "relayline_runs_total", agent="default", event=event) > 0
            for event in ("completed", "cancelled", "failed")
        ),
    )
    for event, least in (("started", 3), ("completed", 1), ("cancelled", 1), ("failed", 1)):
        value = sample(worker, "relayline_runs_total", agent="default", event=event)
        assert value == least, (event, value)
    assert sample(worker, "relayline_tool_executions_total", tool="weather", outcome="ok") == 1
    assert sample(worker, "relayline_model_calls_total", outcome="ok") == 2
    assert sample(worker, "relayline_model_calls_total", outcome="stopped") == 1
    assert sample(worker, "relayline_model_calls_total", outcome="error") == 1
    durations = sample(
        worker, "relayline_task_duration_seconds_count", agent="default", outcome="completed"
    )
    assert durations == 1

    scraped = requests.get(f"{web.url}/metrics", timeout=10)
    assert scraped.headers["Content-Type"].startswith("text/plain")
    text = scraped.text
    assert sample(text, "relayline_relayed_streams_open") == 0  # every stream closed
    assert sample(text, "relayline_events_relayed_total") > 10
    assert sample(text, "relayline_time_to_first_event_seconds_count") >= 3
    # Every turn was started: the gauge is there, and zero.
    assert re.search(r"^relayline_queued_turns 0\.0$", text, re.MULTILINE)
    assert sample(text, "relayline_redis_used_memory_bytes") > 0


def _scrape_until(url: str, ready: Callable[[str], bool], timeout: float = 10.0) -> str:
    """The metrics once ``ready`` says so (bounded: then the last scrape, for its asserts)."""
    gap = threading.Event()  # never set: a pause between scrapes
    deadline = time.monotonic() + timeout
    text = requests.get(url, timeout=10).text
    while not ready(text) and time.monotonic() < deadline:
        gap.wait(0.05)
        text = requests.get(url, timeout=10).text
    return text


def test_metrics_are_off_unless_enabled(tmp_path: Path, redis_url: str) -> None:
    env = fresh_env(tmp_path, redis_url)
    web = WebServer(env)
    try:
        off = requests.get(f"{web.url}/metrics", timeout=10)
        assert off.status_code == 404 and "RELAYLINE_METRICS" in off.json()["error"]
    finally:
        web.stop()
    assert Settings.from_env({"RELAYLINE_METRICS": "1"}).metrics
    with pytest.raises(ValueError, match="RELAYLINE_METRICS_PORT"):
        Settings.from_env({"RELAYLINE_METRICS_PORT": "web"})
