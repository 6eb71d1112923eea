"""Double texting with a real worker, web app and Redis: a second message while the
first still answers is refused by default (409), ``interrupt`` stops the running answer
and starts the new turn, ``enqueue`` starts it when the running one ends (the client
sees it queued), and ``interrupt`` on a suspended run settles its wait instead of
dropping it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from relayline.shared.persistence import Store
from relayline.shared.texts import CALL_STOPPED
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, frames, text_of
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration


@pytest.fixture
def web(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[WebServer]:
    with (
        redis_databases.database(f"multitask {tmp_path.name}") as redis_url,
        running_stack(fresh_env(tmp_path, redis_url)) as (server, _workers),
    ):
        yield server


def _live(web: WebServer, thread: str, text: str, query: str = "") -> requests.Response:
    return requests.post(
        f"{web.url}/api/threads/{thread}/messages{query}",
        json={"content": text},
        stream=True,
        timeout=60,
    )


def _until_text(response: requests.Response) -> Iterator[dict[str, object]]:
    stream = frames(response)
    for frame in stream:
        if frame.event["type"] == "text":
            break
    return (f.event for f in stream)


def test_reject_is_the_default_and_interrupt_stops_the_running_answer(
    web: WebServer, tmp_path: Path
) -> None:
    first = _live(web, "dt-1", "a story")
    rest = _until_text(first)
    refused = requests.post(
        f"{web.url}/api/threads/dt-1/messages", json={"content": "hi"}, timeout=10
    )
    assert refused.status_code == 409
    bad = requests.post(
        f"{web.url}/api/threads/dt-1/messages?multitask=later", json={"content": "hi"}
    )
    assert bad.status_code == 400 and "multitask" in bad.json()["error"]

    second = requests.post(
        f"{web.url}/api/threads/dt-1/messages?multitask=interrupt",
        json={"content": "hi instead"},
        timeout=60,
    )
    assert second.status_code == 200
    assert text_of(events_of(second.text)).startswith("Hello! hi instead")
    ending = list(rest)[-2:]  # the first answer ended stopped
    assert [e["type"] for e in ending] == ["cancelled", "done"]
    assert ending[-1]["status"] == "cancelled"
    assert count(tmp_path, "model.closed") == 1
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}", migrate=False)
    try:
        roles = [(m.role, m.meta.get("stopped", False)) for m in store.messages("dt-1")]
        stopped = [("user", False), ("assistant", True)]
        fresh = [("user", False), ("assistant", False)]
        assert roles == [*stopped, *fresh]
    finally:
        store.dispose()


def test_enqueue_starts_the_new_turn_when_the_running_one_ends(web: WebServer) -> None:
    first = _live(web, "dt-2", "slow one")
    rest = _until_text(first)
    queued = _live(web, "dt-2", "hi after", "?multitask=enqueue")
    assert queued.status_code == 200
    assert queued.headers["X-Relayline-Queued"] == "1"
    events = [f.event for f in frames(queued)]
    assert events[0] == {"type": "queued", "position": 1}
    assert text_of(events).startswith("Hello! hi after")
    first_text = "".join(str(e.get("content", "")) for e in rest if e["type"] == "text")
    assert first_text  # the first answer ran to its end, not stopped
    thread = requests.get(f"{web.url}/api/threads/dt-2", timeout=10).json()
    assert thread["run"]["status"] == "completed"


def test_interrupt_on_a_suspended_run_settles_its_wait(web: WebServer, tmp_path: Path) -> None:
    waiting = requests.post(
        f"{web.url}/api/threads/dt-3/messages", json={"content": "delete it"}, timeout=60
    )
    assert '"interrupt"' in waiting.text
    second = requests.post(
        f"{web.url}/api/threads/dt-3/messages?multitask=interrupt",
        json={"content": "never mind"},
        timeout=60,
    )
    assert second.status_code == 200 and "Hello!" in text_of(events_of(second.text))
    assert count(tmp_path, "tool.delete_file") == 0
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}", migrate=False)
    try:
        settled = [m for m in store.messages("dt-3") if m.role == "tool"]
        assert [p.content for p in settled[0].tool_results] == [CALL_STOPPED, CALL_STOPPED]
    finally:
        store.dispose()


def test_a_turn_queued_behind_a_suspended_run_starts_once_it_is_stopped(web: WebServer) -> None:
    waiting = requests.post(
        f"{web.url}/api/threads/dt-4/messages", json={"content": "delete it"}, timeout=60
    )
    assert '"interrupt"' in waiting.text
    queued = _live(web, "dt-4", "hi later", "?multitask=enqueue")
    assert queued.headers["X-Relayline-Queued"] == "1"
    stop = requests.post(f"{web.url}/api/threads/dt-4/cancel", timeout=10).json()
    assert stop["stopped"] is True
    assert text_of([f.event for f in frames(queued)]).startswith("Hello! hi later")
