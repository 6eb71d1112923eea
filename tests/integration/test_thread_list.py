"""A person's thread list and deleting a thread, with a real worker, web app and Redis
in token mode: newest first with cursor paging, only the caller's threads; a delete
during a live run stops it first, erases its messages, runs and stream logs, and the
thread is a 404 everywhere after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from relayline.channels.keys import log_key, segments_key
from relayline.channels.stream.log import latest_segment
from relayline.shared.auth import mint_token
from tests.support.agents import count
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration

SECRET = "thread-list-secret-of-at-least-32-chars"


@pytest.fixture
def stack(tmp_path: Path, redis_databases: RedisDatabases) -> Iterator[tuple[WebServer, str]]:
    with (
        redis_databases.database(f"threads {tmp_path.name}") as redis_url,
        running_stack(
            fresh_env(tmp_path, redis_url, RELAYLINE_AUTH="token", SECRET_KEY=SECRET)
        ) as (server, _workers),
    ):
        yield server, redis_url


def _as(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(SECRET, user)}"}


def _turn(web: WebServer, user: str, thread: str, text: str) -> None:
    answer = requests.post(
        f"{web.url}/api/threads/{thread}/messages",
        json={"content": text},
        headers=_as(user),
        timeout=60,
    )
    assert answer.status_code == 200, answer.text


def test_the_list_pages_the_callers_threads_newest_first(stack: tuple[WebServer, str]) -> None:
    web, _ = stack
    for index, thread in enumerate(["t-a", "t-b", "t-c"]):
        _turn(web, "ann", thread, f"hello number {index}   with  spaces")
    _turn(web, "bob", "t-bob", "hello from bob")
    _turn(web, "ann", "t-a", "hello again")  # t-a is the most recently updated now

    first = requests.get(f"{web.url}/api/threads?limit=2", headers=_as("ann"), timeout=10)
    body = first.json()
    assert [t["threadId"] for t in body["threads"]] == ["t-a", "t-c"]
    assert body["threads"][0]["title"] == "hello number 0 with spaces"  # the first message
    assert {t["status"] for t in body["threads"]} == {"completed"}
    assert body["cursor"]
    rest = requests.get(
        f"{web.url}/api/threads", params={"limit": 2, "cursor": body["cursor"]}, headers=_as("ann")
    ).json()
    assert [t["threadId"] for t in rest["threads"]] == ["t-b"] and rest["cursor"] is None
    bob = requests.get(f"{web.url}/api/threads", headers=_as("bob"), timeout=10).json()
    assert [t["threadId"] for t in bob["threads"]] == ["t-bob"]

    for query in ("limit=0", "limit=101", "limit=x", "cursor=not-a-cursor"):
        bad = requests.get(f"{web.url}/api/threads?{query}", headers=_as("ann"), timeout=10)
        assert bad.status_code == 400 and bad.json()["error"]


def test_a_delete_during_a_live_run_stops_it_and_erases_everything(
    stack: tuple[WebServer, str], tmp_path: Path
) -> None:
    web, redis_url = stack
    _turn(web, "ann", "t-del", "hello first")
    live = requests.post(
        f"{web.url}/api/threads/t-del/messages",
        json={"content": "a story now"},
        headers=_as("ann"),
        stream=True,
        timeout=60,
    )
    stream = frames(live)
    for frame in stream:
        if frame.event["type"] == "text":
            break
    client = redis.Redis.from_url(redis_url)
    try:
        segment = latest_segment(client, "t-del")
        assert segment is not None and client.exists(log_key(segment.segment_id))
        assert requests.delete(f"{web.url}/api/threads/t-del", headers=_as("bob")).status_code == (
            404
        )
        gone = requests.delete(f"{web.url}/api/threads/t-del", headers=_as("ann"), timeout=30)
        assert gone.status_code == 204
        ending = [f.event for f in stream][-2:]  # stopped, then erased
        assert [e["type"] for e in ending] == ["cancelled", "done"]
        assert ending[-1]["status"] == "cancelled"
        assert count(tmp_path, "model.closed") == 1
        assert not client.exists(log_key(segment.segment_id), segments_key("t-del"))
        assert latest_segment(client, "t-del") is None
    finally:
        client.close()
    for path in ("/api/threads/t-del", "/api/chat/t-del", "/agui/threads/t-del"):
        assert requests.get(f"{web.url}{path}", headers=_as("ann"), timeout=10).status_code == 404
    listed = requests.get(f"{web.url}/api/threads", headers=_as("ann"), timeout=10).json()
    assert "t-del" not in [t["threadId"] for t in listed["threads"]]
