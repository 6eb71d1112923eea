"""Requests racing over one run, against the running stack (the web app on a real port,
a real Celery worker, Redis, SQLite and PostgreSQL), through every protocol:

- concurrent duplicate approvals: exactly one continues the run, every other is a 409
  ``RunNotWaitingError`` carrying the run's id and the status it lost to;
- stops at every moment of short turns (before the first event, at each delta, racing
  the run's own end, after it): a stop answered ``stopped: true`` is a run that ends
  ``cancelled``, and ``stopped: false`` carries the status the run ended with.

No sleeps: the moment of each stop is the n-th event the client has read.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import requests

from tests.support.agents import count
from tests.support.database_stacks import stack_on_database
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames

pytestmark = pytest.mark.integration

Protocol = Literal["native", "agui", "vercel"]
PROTOCOLS: tuple[Protocol, ...] = ("native", "agui", "vercel")
#: concurrent answers to one approval, per protocol
DUPLICATES = 60
#: parallel threads of turns per protocol, and stopped turns per thread
LANES = 3
TURNS = 34


@dataclasses.dataclass(frozen=True)
class Stack:
    url: str
    counts: Path

    def post(self, path: str, body: object | None = None, **options: Any) -> requests.Response:
        return requests.post(self.url + path, json=body, timeout=60, **options)

    def get(self, path: str) -> Any:
        response = requests.get(self.url + path, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def run(self, thread: str) -> dict[str, Any]:
        run: dict[str, Any] = self.get(f"/api/threads/{thread}")["run"]
        return run


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
) -> Iterator[Stack]:
    with stack_on_database(request, tmp_path_factory, redis_databases, "races") as on:
        yield Stack(on.web.url, on.counts)


# -- one turn in each protocol ------------------------------------------------------------

_ids = itertools.count(1)


def _turn(protocol: Protocol, thread: str, text: str) -> tuple[str, dict[str, Any]]:
    """The route and body of a new turn saying ``text``."""
    message_id = f"u-{next(_ids)}"
    if protocol == "native":
        return f"/api/threads/{thread}/messages", {"content": text}
    if protocol == "agui":
        return "/agui", {
            "threadId": thread,
            "runId": f"client-{message_id}",
            "state": {},
            "messages": [{"id": message_id, "role": "user", "content": text}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    parts = [{"type": "text", "text": text}]
    return "/api/chat", {
        "id": thread,
        "trigger": "submit-message",
        "messages": [{"id": message_id, "role": "user", "parts": parts}],
    }


APPROVED = {"approved": True}


def _approval(stack: Stack, protocol: Protocol, thread: str) -> tuple[str, dict[str, Any]]:
    """The route and body approving the call ``call_e`` the thread's run waits on, as
    each client builds it from what it holds (a reload here)."""
    if protocol == "native":
        return f"/api/threads/{thread}/approvals", {"call_e": "approve"}
    if protocol == "agui":
        page = stack.get(f"/agui/threads/{thread}")
        (interrupt,) = page["interrupts"]
        return "/agui", {
            "threadId": thread,
            "runId": "client-approve",
            "state": {},
            "messages": page["messages"],
            "tools": [],
            "context": [],
            "forwardedProps": {},
            "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": APPROVED}],
        }
    messages = stack.get(f"/api/chat/{thread}")["messages"]
    part = next(p for p in messages[-1]["parts"] if p.get("toolCallId") == "call_e")
    assert part["state"] == "approval-requested"
    part["state"] = "approval-responded"
    part["approval"] = {**part["approval"], "approved": True}
    return "/api/chat", {"id": thread, "trigger": "submit-message", "messages": messages}


#: what each protocol's stream ends a completed and a stopped run with
LAST_EVENT: dict[Protocol, dict[str, str]] = {
    "native": {"completed": "done", "cancelled": "done"},
    "agui": {"completed": "RUN_FINISHED", "cancelled": "RUN_FINISHED"},
    "vercel": {"completed": "finish", "cancelled": "abort"},
}


def _read_all(response: requests.Response) -> list[dict[str, Any]]:
    return [frame.event for frame in frames(response)]


# -- concurrent duplicate approvals --------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_of_concurrent_duplicate_approvals_one_continues_and_the_others_get_409(
    stack: Stack, protocol: Protocol
) -> None:
    thread = f"approve-{protocol}-{uuid.uuid4().hex[:8]}"
    route, body = _turn(protocol, thread, "erase it")
    first = stack.post(route, body)
    assert first.status_code == 200 and stack.run(thread)["status"] == "suspended"
    run_id = stack.run(thread)["runId"]
    executed = count(stack.counts, "tool.delete_file")
    route, body = _approval(stack, protocol, thread)

    gate = threading.Barrier(DUPLICATES)
    answers: list[tuple[int, Any]] = []

    def approve() -> None:
        with requests.Session() as session:
            gate.wait(30)  # every request leaves at once
            response = session.post(stack.url + route, json=body, timeout=60, stream=True)
            if response.status_code == 200:
                answers.append((200, _read_all(response)))
            else:
                answers.append((response.status_code, response.json()))

    senders = [threading.Thread(target=approve) for _ in range(DUPLICATES)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(90)

    assert len(answers) == DUPLICATES
    winners = [events for status, events in answers if status == 200]
    losers = [refusal for status, refusal in answers if status != 200]
    assert len(winners) == 1, [s for s, _ in answers]
    assert winners[0][-1]["type"] == LAST_EVENT[protocol]["completed"]
    assert {status for status, _ in answers} == {200, 409}
    for refusal in losers:
        assert refusal["type"] == "RunNotWaitingError", refusal
        assert refusal["runId"] == run_id
        if refusal["code"] == "ALREADY_ANSWERED":  # read while the run still waited
            assert refusal["status"] in ("suspended", "running", "completed"), refusal
        else:
            assert refusal["code"] == "RUN_NOT_WAITING", refusal
            assert refusal["status"] in ("running", "completed"), refusal
    assert stack.run(thread)["status"] == "completed"
    assert count(stack.counts, "tool.delete_file") == executed + 1  # approved once, run once


# -- stops at every moment -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Stopped:
    """One stopped turn: after how many events the stop was sent, what it answered,
    and how the run ended."""

    protocol: Protocol
    moment: int
    stopped: bool
    status: str | None
    final: str
    last_event: str


def _stop(stack: Stack, protocol: Protocol, thread: str, stream_id: str) -> tuple[bool, Any]:
    if protocol == "native":
        answer = stack.post(f"/api/threads/{thread}/cancel")
    elif protocol == "agui":
        answer = stack.post(f"/agui/stop/{thread}")
    else:
        answer = stack.post(f"/api/chat/{thread}/stop", {"activeStreamId": stream_id})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return bool(body["stopped"]), body.get("status")


def _stopped_turn(stack: Stack, protocol: Protocol, thread: str, moment: int) -> Stopped:
    route, body = _turn(protocol, thread, "brief answer please")
    live = stack.post(route, body, stream=True)
    assert live.status_code == 200, live.text
    stream = frames(live)
    seen = [frame.event for frame in itertools.islice(stream, moment)]  # the stop's moment
    stopped, status = _stop(stack, protocol, thread, live.headers["X-Relayline-Stream-Id"])
    seen += [frame.event for frame in stream]  # the stream always ends
    final = stack.run(thread)["status"]
    return Stopped(protocol, moment, stopped, status, final, seen[-1]["type"])


def _lane(stack: Stack, protocol: Protocol, lane: int, out: list[Stopped]) -> None:
    thread = f"stops-{protocol}-{lane}-{uuid.uuid4().hex[:8]}"
    route, body = _turn(protocol, thread, "brief answer please")
    events = len(_read_all(stack.post(route, body, stream=True)))  # an unstopped turn
    # Every moment from "before the first event" to "after the end", the last few
    # (racing the run's own completion) more often.
    moments = [*range(events + 1), *[events - 2, events - 1, events] * 3]
    for turn in range(TURNS):
        out.append(_stopped_turn(stack, protocol, thread, moments[(turn + lane) % len(moments)]))


def test_every_stop_answers_what_happened_to_its_run(stack: Stack) -> None:
    outcomes: list[Stopped] = []
    failures: list[BaseException] = []

    def lane(protocol: Protocol, index: int) -> Callable[[], None]:
        def run() -> None:
            try:
                _lane(stack, protocol, index, outcomes)
            except BaseException as exc:  # reported below, with the lane's outcomes
                failures.append(exc)

        return run

    began = time.monotonic()
    lanes = [threading.Thread(target=lane(p, i)) for p in PROTOCOLS for i in range(LANES)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join(120)
    elapsed = time.monotonic() - began
    assert not failures, failures
    assert len(outcomes) == len(PROTOCOLS) * LANES * TURNS

    wrong = [
        o
        for o in outcomes
        if (o.stopped and o.final != "cancelled") or (not o.stopped and o.status != o.final)
    ]
    assert wrong == [], f"{len(wrong)} of {len(outcomes)} stops answered wrongly: {wrong}"
    for o in outcomes:
        assert o.final in ("cancelled", "completed"), o
        assert o.last_event == LAST_EVENT[o.protocol][o.final], o
    # The race was run both ways in every protocol: stops that won and runs that ended
    # first; the end-racing moments gave both.
    for protocol in PROTOCOLS:
        finals = {o.final for o in outcomes if o.protocol == protocol}
        assert finals == {"cancelled", "completed"}, (protocol, finals)
    print(
        f"{len(outcomes)} stopped turns in {elapsed:.1f} s: "
        f"{sum(o.stopped for o in outcomes)} stopped, "
        f"{sum(not o.stopped for o in outcomes)} ended first"
    )
