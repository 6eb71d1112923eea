"""The official ``@ag-ui/client`` (1.0.0) ``HttpAgent`` accepts a turn that waited for a
worker (issue 32, web.waiting): its stream starts with ``RUN_STARTED`` and the
``relayline.status`` CUSTOM event ``queued`` while no worker runs; a worker started only
then runs the turn, whose own ``RUN_STARTED`` is not sent a second time (the client's
verifier refuses both an event before ``RUN_STARTED`` and a second one in a run)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.node_suites import install_node_packages
from tests.support.orphan_guard import guarded
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = [pytest.mark.integration, pytest.mark.contract]

AGUI_DIR = Path(__file__).parent / "agui"
#: seconds before the queued notice; far from the give-up so the worker has time to start
WAITS = {"RELAYLINE_QUEUED_NOTICE_SECONDS": "0.5", "RELAYLINE_NO_WORKER_SECONDS": "60"}


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[tuple[WebServer, dict[str, str]]]:
    counts = tmp_path_factory.mktemp("agui-queued")
    with redis_databases.database("AG-UI queued turn") as redis_url:
        env = fresh_env(counts, redis_url, **WAITS)
        web = WebServer(env)
        try:
            yield web, env
        finally:
            web.stop()


def test_official_client_accepts_a_turn_that_waited_for_a_worker(
    node: str, stack: tuple[WebServer, dict[str, str]]
) -> None:
    install_node_packages(AGUI_DIR)
    web, env = stack
    script = [node, "queued-turn.mjs", web.url, "queued-agui", "hello there"]
    client = subprocess.Popen(
        guarded(script),
        cwd=AGUI_DIR,
        env=env,  # PYTHONPATH: the orphan guard is a module of this repository
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert client.stdout is not None
    events: list[dict[str, Any]] = []
    worker: Worker | None = None
    try:
        for line in client.stdout:  # each line as the client applies the event
            kind, _, payload = line.partition(" ")
            if kind == "result":
                result = json.loads(payload)
                break
            event = json.loads(payload)
            events.append(event)
            if event["type"] == "CUSTOM" and worker is None:
                assert event["name"] == "relayline.status"
                assert event["value"]["state"] == "queued"
                began = time.monotonic()
                worker = Worker(env, "agui-queued")  # the turn is still there: it runs now
        else:
            pytest.fail(f"the client ended without a result: {client.stderr.read()}")  # type: ignore[union-attr]
        client.wait(timeout=30)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        client.stdout.close()
        if client.stderr is not None:
            client.stderr.close()
        if worker is not None:
            worker.stop()
    assert worker is not None, f"no queued status before the run: {events}"
    assert "error" not in result, result
    assert result["runError"] is None and result["outcome"] == "success"
    types = [event["type"] for event in events]
    assert types[:2] == ["RUN_STARTED", "CUSTOM"] and types[-1] == "RUN_FINISHED"
    assert types.count("RUN_STARTED") == 1
    assert events[0]["runId"] == events[-1]["runId"] == "queued-agui-run"
    reply = [m for m in result["messages"] if m["role"] == "assistant"]
    assert reply and reply[-1]["content"], result["messages"]
    assert time.monotonic() - began < 60
