"""The web path stays thin: ``POST /agui`` makes at most three database queries before it
enqueues, and the job it puts on the real broker does not grow with the thread.

No worker runs here, so every job stays in the Redis broker queue where the test reads
it exactly as a worker would receive it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis
import requests
import sqlalchemy as sa

from relayline.shared.agent import Agent
from relayline.shared.interrupts import ToolResultsRequest
from relayline.shared.jobs import TurnJob
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, fresh_env

pytestmark = pytest.mark.integration


class Web:
    def __init__(self, server: WebServer, broker: redis.Redis, store: Store) -> None:
        self.server = server
        self.broker = broker
        self.store = store
        self.queries: list[str] = []
        engine = server.app.extensions["relayline"].store.engine
        sa.event.listen(engine, "before_cursor_execute", self._count)

    def _count(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.queries.append(statement)

    def post_agui(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST, then the job the request enqueued and how many queries it made."""
        self.queries.clear()
        self.broker.delete("celery")
        with requests.post(
            f"{self.server.url}/agui", json=body, stream=True, timeout=30
        ) as response:
            assert response.status_code == 200, response.text
            # The job is sent before the response starts: the queue holds it now.
            queued = cast(list[bytes], self.broker.lrange("celery", 0, -1))  # sync client
        assert len(queued) == 1
        return len(self.queries), json.loads(queued[0])

    @property
    def spec(self) -> Any:
        return self.server.app.extensions["relayline"].registry.spec()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases) -> Iterator[Web]:
    # A database of its own: the tests read the jobs on its "celery" queue.
    with redis_databases.database("thin web path") as redis_url:
        env = fresh_env(tmp_path_factory.mktemp("thin"), redis_url)
        server = WebServer(env, {"RELAYLINE_HEARTBEAT_SECONDS": 0.05})
        broker = redis.Redis.from_url(redis_url)
        store = Store(env["DATABASE_URL"])
        try:
            yield Web(server, broker, store)
        finally:
            server.stop()
            broker.close()
            store.dispose()


def _thread_of(store: Store, thread_id: str, turns: int) -> list[dict[str, Any]]:
    """A stored thread of ``turns`` completed exchanges and the AG-UI history a client
    holds for it (same ids, as ``@ag-ui/client`` sends on every request)."""
    store.create_thread(thread_id, "anonymous")
    stored: list[Message] = []
    held: list[dict[str, Any]] = []
    for turn in range(turns):
        question = Message.user(f"Question number {turn:04d}", id=f"u{turn:05d}")
        answer = Message(id=f"a{turn:05d}", role="assistant", text=f"Answer number {turn:04d}")
        stored += [question, answer]
        held += [
            {"id": question.id, "role": "user", "content": question.text},
            {"id": answer.id, "role": "assistant", "content": answer.text},
        ]
    store.append_messages(thread_id, stored)
    return held


def _body(thread_id: str, held: list[dict[str, Any]], text: str) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": "client-run",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [*held, {"id": "u_new", "role": "user", "content": text}],
    }


def _job_size(message: dict[str, Any]) -> int:
    return len(json.dumps(message))


def test_the_job_of_turn_200_is_no_larger_than_that_of_turn_2(web: Web) -> None:
    short = _thread_of(web.store, "thin-002", 1)
    long = _thread_of(web.store, "thin-200", 199)

    _, second = web.post_agui(_body("thin-002", short, "Hello there"))
    _, two_hundredth = web.post_agui(_body("thin-200", long, "Hello there"))

    assert second["headers"]["task"] == two_hundredth["headers"]["task"] == "relayline.run_turn"
    assert _job_size(two_hundredth) <= _job_size(second)
    # What the job carries of the client's history: only the message the store lacks.
    body = json.loads(_decoded_body(two_hundredth))
    job = body[1]["job"]
    assert [m["id"] for m in job["seed"]["messages"]] == ["u_new"]
    assert job["message"] == {"id": "u_new", "text": "Hello there"}


def _decoded_body(message: dict[str, Any]) -> str:
    raw = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        return base64.b64decode(raw).decode()
    return str(raw)


def test_a_new_turn_makes_at_most_three_queries(web: Web) -> None:
    held = _thread_of(web.store, "thin-queries", 50)
    queries, _ = web.post_agui(_body("thin-queries", held, "One more question"))
    assert queries <= 3, web.queries
    # No statement loads the thread's messages (only a lookup of ids).
    assert not [q for q in web.queries if "messages.content" in q]


def test_a_continuation_makes_at_most_three_queries(web: Web) -> None:
    held = _thread_of(web.store, "thin-continue", 20)
    agent = Agent("thin-continue", web.spec, web.store)
    state = agent.run(Message.user("Read the title please", id="u_title"))
    assert state.status == "suspended" and isinstance(state.interrupt, ToolResultsRequest)
    parent = state.interrupt.tool_calls[0].parent_message_id
    call = {
        "id": "call_t",
        "type": "function",
        "function": {"name": "read_title", "arguments": "{}"},
    }
    held += [
        {"id": "u_title", "role": "user", "content": "Read the title please"},
        {"id": parent, "role": "assistant", "toolCalls": [call]},
        {"id": "tool-answer", "role": "tool", "toolCallId": "call_t", "content": "Report"},
    ]
    body = _body("thin-continue", held, "")
    body["messages"] = held
    queries, queued = web.post_agui(body)
    assert queued["headers"]["task"] == "relayline.continue_run"
    assert queries <= 3, web.queries
    job = json.loads(_decoded_body(queued))[1]["job"]
    assert job["answers"] == {"call_t": {"result": "Report"}}
    assert [m["id"] for m in job["seed"]["messages"]] == ["tool-answer"]


def test_a_replayed_message_id_is_refused_by_one_lookup(web: Web) -> None:
    held = _thread_of(web.store, "thin-replay", 3)
    web.broker.delete("celery")
    body = _body("thin-replay", held[:-1], "again")
    body["messages"][-1]["id"] = "u00002"  # the id of a stored user message
    response = requests.post(f"{web.server.url}/agui", json=body, timeout=30)
    assert response.status_code == 409
    assert "u00002" in response.json()["error"]
    assert web.broker.llen("celery") == 0


def test_a_new_turn_without_an_id_gets_a_minted_one(web: Web) -> None:
    held = _thread_of(web.store, "thin-noid", 1)
    body = _body("thin-noid", held, "No id here")
    del body["messages"][-1]["id"]
    _, queued = web.post_agui(body)
    job = json.loads(_decoded_body(queued))[1]["job"]
    assert job["message"]["id"] not in ("None", "", None)
    assert job["message"]["id"].startswith("msg_")


def test_the_job_is_the_typed_contract(web: Web) -> None:
    held = _thread_of(web.store, "thin-typed", 2)
    _, queued = web.post_agui(_body("thin-typed", held, "Typed"))
    job = TurnJob.from_json(json.loads(_decoded_body(queued))[1]["job"])
    assert job.thread_id == "thin-typed" and job.protocol == "agui"
    assert job.target is not None and job.target.kind == "relay"
    assert job.message.text == "Typed"


def test_the_broker_headers_never_carry_the_persons_text(web: Web) -> None:
    held = _thread_of(web.store, "thin-private", 1)
    _, message = web.post_agui(_body("thin-private", held, "my secret diagnosis"))

    headers = json.dumps(message["headers"])
    assert "my secret diagnosis" not in headers  # Celery would put a repr of it there
    assert "thin-private" in message["headers"]["kwargsrepr"]  # still names the job
    assert "my secret diagnosis" in _decoded_body(message)  # the worker gets it all
