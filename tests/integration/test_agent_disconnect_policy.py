"""``AgentSpec(on_disconnect="cancel")``, the per-agent choice behind ``?onDisconnect=``,
with a real worker, web app and Redis: for an agent whose clients cannot resume (their
Stop only aborts the request, as assistant-ui's does), a dropped relayed request stops
the run; a request that says ``?onDisconnect=continue`` (a client that resumes) keeps
it going to completion."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from relayline.shared.agent import AgentSpec
from relayline.shared.persistence import Store
from tests.support.agents import count, env_spec
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration

AGENT = "tests.support.agents:cancel_on_disconnect_spec"


@pytest.fixture
def stack(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[WebServer]:
    with (
        redis_databases.database(f"agent-disconnect {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url, RELAYLINE_AGENT=AGENT)) as (web, _workers),
    ):
        yield web


def _drop_after_text(url: str, content: str) -> None:
    """Post a turn, read until its second text frame, then drop the connection."""
    live = requests.post(url, json={"content": content}, stream=True, timeout=60)
    seen = 0
    for frame in frames(live):
        seen += frame.event["type"] == "text"
        if seen >= 2:
            break
    assert seen >= 2, "the stream ended before two text frames"
    live.close()


def _wait_for_status(tmp_path: Path, thread_id: str, wanted: str) -> str | None:
    """The run's status once it is ``wanted``, or as it stands after 30 s (a bounded
    wait on the database: the worker writes it)."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}", migrate=False)
    deadline = threading.Event()
    timer = threading.Timer(30, deadline.set)
    timer.start()
    try:
        while not deadline.is_set():
            record = store.current_run(thread_id)
            if record is not None and record.status == wanted:
                return wanted
            deadline.wait(0.05)
        record = store.current_run(thread_id)
        return None if record is None else record.status
    finally:
        timer.cancel()
        store.dispose()


def test_the_agent_default_cancel_stops_a_dropped_run(stack: WebServer, tmp_path: Path) -> None:
    _drop_after_text(f"{stack.url}/api/threads/ad-drop/messages", "a long story")
    assert _wait_for_status(tmp_path, "ad-drop", "cancelled") == "cancelled"
    assert count(tmp_path, "model.closed") == 1  # the loop closed the model stream


def test_a_request_saying_continue_keeps_its_run_going(stack: WebServer, tmp_path: Path) -> None:
    _drop_after_text(
        f"{stack.url}/api/threads/ad-keep/messages?onDisconnect=continue", "a slow answer"
    )
    assert _wait_for_status(tmp_path, "ad-keep", "completed") == "completed"
    assert count(tmp_path, "model.closed") == 0


def test_an_unknown_policy_is_refused_by_the_spec() -> None:
    with pytest.raises(ValueError, match="on_disconnect must be one of continue, cancel"):
        AgentSpec(provider=env_spec().provider, on_disconnect="sometimes")  # type: ignore[arg-type]
