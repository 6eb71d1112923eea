"""RELAYLINE_AUTH=token: a thread belongs to its creator; everyone else gets 404."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from relayline.channels import ActiveSegment, LogLimits, LogOnlyChannel, SegmentLog, announce
from relayline.shared.auth import mint_token
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.web import create_app

pytestmark = pytest.mark.integration

SECRET = "test-secret-of-at-least-32-characters"


@pytest.fixture
def client(tmp_path: Path, redis_url: str) -> Iterator[FlaskClient]:
    database_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = Store(database_url)
    store.create_thread("ann-thread", "ann")
    store.dispose()
    settings = Settings.from_env(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "RELAYLINE_AUTH": "token",
            "SECRET_KEY": SECRET,
            "RELAYLINE_AGENT": "tests.support.agents:env_spec",
        }
    )
    app = create_app(settings)
    with app.test_client() as test_client:
        yield test_client
    app.extensions["relayline"].close()


def bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(SECRET, user)}"}


READS = ["/agui/threads/ann-thread", "/api/chat/ann-thread", "/api/threads/ann-thread"]
WRITES = [
    ("/api/threads/ann-thread/tool-results", {"call_1": {"result": "x"}}),
    ("/api/threads/ann-thread/approvals", {"call_1": "approve"}),
    ("/api/threads/ann-thread/messages", {"content": "hi"}),
    ("/api/chat", {"id": "ann-thread", "messages": [{"id": "u", "role": "user", "parts": []}]}),
    (
        "/agui",
        {"threadId": "ann-thread", "messages": [{"id": "u", "role": "user", "content": "hi"}]},
    ),
    # Stopping is authorized like writing.
    ("/api/threads/ann-thread/cancel", {}),
    ("/api/chat/ann-thread/stop", {}),
    ("/agent/default/stop/ann-thread", {}),
    ("/agui/stop/ann-thread", {}),
    # Connecting to a thread is authorized like reading it.
    ("/agui/connect", {"threadId": "ann-thread"}),
    ("/agent/default/connect", {"threadId": "ann-thread"}),
]


@pytest.mark.parametrize("path", READS)
def test_owner_reads_and_others_get_404(client: FlaskClient, path: str) -> None:
    assert client.get(path, headers=bearer("ann")).status_code == 200
    other = client.get(path, headers=bearer("bob"))
    assert other.status_code == 404
    assert other.get_json() == {"error": "Thread 'ann-thread' was not found.", "type": "NotFound"}
    assert client.get(path).status_code == 401
    forged = {"Authorization": "Bearer ann.forged-signature"}
    assert client.get(path, headers=forged).status_code == 401


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_others_cannot_write_to_a_thread(client: FlaskClient, path: str, body: object) -> None:
    response = client.post(path, json=body, headers=bearer("bob"))
    assert response.status_code == 404
    assert client.post(path, json=body).status_code == 401


def test_an_unknown_thread_is_404_for_everyone(client: FlaskClient) -> None:
    assert client.get("/api/threads/nobody", headers=bearer("ann")).status_code == 404


@pytest.mark.parametrize("path", ["/api/threads/ann-thread/stream", "/api/chat/ann-thread/stream"])
def test_resuming_is_authorized_like_reading(client: FlaskClient, path: str) -> None:
    assert client.get(path, headers=bearer("ann")).status_code == 204  # nothing is active
    other = client.get(path, headers=bearer("bob"))
    assert other.status_code == 404
    assert other.get_json() == {"error": "Thread 'ann-thread' was not found.", "type": "NotFound"}
    assert client.get(path).status_code == 401


def test_a_thread_is_listed_and_deleted_by_its_owner_only(client: FlaskClient) -> None:
    listed = client.get("/api/threads", headers=bearer("ann")).get_json()
    assert [t["threadId"] for t in listed["threads"]] == ["ann-thread"]
    assert client.get("/api/threads", headers=bearer("bob")).get_json()["threads"] == []
    assert client.get("/api/threads").status_code == 401
    assert client.delete("/api/threads/ann-thread", headers=bearer("bob")).status_code == 404
    assert client.delete("/api/threads/ann-thread").status_code == 401
    assert client.get("/api/threads/ann-thread", headers=bearer("ann")).status_code == 200
    assert client.delete("/api/threads/ann-thread", headers=bearer("ann")).status_code == 204
    for path in READS:
        assert client.get(path, headers=bearer("ann")).status_code == 404
    assert client.delete("/api/threads/ann-thread", headers=bearer("ann")).status_code == 404


#: what the running segments below carry: their owner reads it, nobody else
SECRET_WORDS = "ann's words in flight"

#: a running segment's first events in each protocol, as its worker's channel logs them
SEGMENT_EVENTS = {
    "native": [
        ProtocolEvent("step-started", {"name": "model", "metadata": {"step": 1}}),
        ProtocolEvent("text", {"messageId": "m1", "content": SECRET_WORDS}),  # after 0
    ],
    "vercel": [
        ProtocolEvent("start", {"messageId": "m1"}),
        ProtocolEvent("text-start", {"id": "t1"}),
        ProtocolEvent("text-delta", {"id": "t1", "delta": SECRET_WORDS}),
    ],
    "agui": [
        ProtocolEvent("RUN_STARTED", {"threadId": "ann-thread", "runId": "run_1"}),
        ProtocolEvent("TEXT_MESSAGE_START", {"messageId": "m1", "role": "assistant"}),
        ProtocolEvent("TEXT_MESSAGE_CONTENT", {"messageId": "m1", "delta": SECRET_WORDS}),
    ],
}

#: every route that resumes or connects to a thread's running segment, by its protocol
RESUMES = [
    ("native", "GET", "/api/threads/ann-thread/stream", None),
    ("native", "GET", "/api/threads/ann-thread/stream?after=0", None),
    ("vercel", "GET", "/api/chat/ann-thread/stream", None),
    ("agui", "POST", "/agui/connect", {"threadId": "ann-thread"}),
    ("agui", "POST", "/agent/default/connect", {"threadId": "ann-thread"}),
]


def start_segment(client: FlaskClient, protocol: str) -> None:
    """A running segment of ann's thread in ``protocol``: announced as the web does at
    enqueue and written to its log through the channel a worker writes with (no
    transport behind it), with no terminal yet."""
    assert client.application is not None
    redis = client.application.extensions["relayline"].redis
    limits = LogLimits(retention=60, max_age=600, max_events=100)
    segment_id = new_segment_id()
    announce(redis, "ann-thread", ActiveSegment(protocol, segment_id), limits)
    log = SegmentLog(redis, segment_id, "ann-thread", limits, protocol)
    channel = LogOnlyChannel().into_segment(segment_id, log)
    for event in SEGMENT_EVENTS[protocol]:
        channel.send(event)


def read_until(response: TestResponse, words: str, limit: int = 50) -> str:
    """The streamed body read chunk by chunk until it holds ``words`` (the segment has
    no end yet, so the stream stays open after them)."""
    seen = ""
    for index, chunk in enumerate(response.response):
        seen += chunk.decode() if isinstance(chunk, bytes) else str(chunk)
        if words in seen or index >= limit:
            break
    return seen


@pytest.mark.parametrize(("protocol", "method", "path", "body"), RESUMES)
def test_a_running_segment_is_resumed_and_connected_to_by_its_owner_only(
    client: FlaskClient, protocol: str, method: str, path: str, body: object
) -> None:
    start_segment(client, protocol)
    owner = client.open(path, method=method, json=body, headers=bearer("ann"))
    try:
        assert owner.status_code == 200
        assert SECRET_WORDS in read_until(owner, SECRET_WORDS)
    finally:
        owner.close()
    # Someone else learns nothing: not the segment, not that it runs, not by a cursor.
    for headers in (bearer("bob"), {**bearer("bob"), "Last-Event-ID": "0"}):
        other = client.open(path, method=method, json=body, headers=headers)
        assert other.status_code == 404, path
        assert other.get_json() == {
            "error": "Thread 'ann-thread' was not found.",
            "type": "NotFound",
        }
    assert client.open(path, method=method, json=body).status_code == 401
