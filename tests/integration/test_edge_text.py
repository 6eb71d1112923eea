"""Issue 34: text at the edge. For any string holding a lone surrogate or a control
character, put in any field of any route's request (native, AG-UI and Vercel turns, their
continuations, approvals, stop, connect; each value replaced or extended, and a key of
that string added to each object), the answer is a 4xx before any header that changed
nothing, or a stream that ends the way a completed turn ends: never a 5xx, never a stream
that goes quiet. Real Celery worker, Redis and database, on SQLite and on PostgreSQL
(which refuses NUL in text); derandomized, so CI sends the same requests each time."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.database_stacks import stack_on_database
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer

pytestmark = pytest.mark.integration

#: strings per route; each is tried in every field of the route's request
EXAMPLES = 8
#: a relay quiet for this long ends its stream with STREAM_INTERRUPTED: a silent client
RELAY_TIMEOUT = 15.0

EDGE = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    # No shrinking: a stream gone quiet costs the relay's timeout per try, and the
    # failure already names the string, the field and the route.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: what no store or wire takes as it is: lone surrogates, and controls (fine in text, not in ids)
bad_chars = st.one_of(
    st.characters(categories=["Cs"]),
    st.characters(max_codepoint=0x1F),
    st.sampled_from(["\x00", "\x7f", "\x85", "\x9f", "\ud800", "\udfff", "\udbff"]),
)
#: anything else a client may send, surrogates included, beside the bad character
any_chars = st.characters(codec=None, exclude_categories=[])
nasty = st.builds(
    lambda head, bad, tail: head + bad + tail,
    st.text(any_chars, max_size=3),
    bad_chars,
    st.text(any_chars, max_size=3),
)

Kind = Literal["turn", "continue", "stop", "connect"]
Step = str | int
FieldPath = tuple[Step, ...]


class Stack:
    def __init__(self, web: WebServer) -> None:
        self.url = web.url
        self.session = requests.Session()
        self._threads = itertools.count()

    def thread(self) -> str:
        return f"edge-{next(self._threads)}"

    def post(self, path: str, body: Any) -> requests.Response:
        # json.dumps escapes a lone surrogate ("\ud800"), as a browser's JSON.stringify does
        data = json.dumps(body)
        headers = {"Content-Type": "application/json"}
        return self.session.post(
            self.url + path, data=data, headers=headers, stream=True, timeout=(10, 60)
        )

    def events(self, response: requests.Response) -> list[dict[str, Any]]:
        """The SSE events to the end of the stream (a relay gives up after RELAY_TIMEOUT)."""
        assert response.headers["Content-Type"].startswith("text/event-stream")
        # Bytes: str.splitlines would also split at U+2028 or U+0085 inside an event,
        # where SSE splits at CR and LF only.
        events = [
            json.loads(line[len(b"data: ") :].decode())
            for line in response.iter_lines()
            if line.startswith(b"data: ")
        ]
        response.close()
        return events

    def turn(self, path: str, body: Any) -> list[dict[str, Any]]:
        response = self.post(path, body)
        assert response.status_code == 200, response.text
        return self.events(response)

    def run(self, thread: str) -> dict[str, Any] | None:
        response = self.session.get(f"{self.url}/api/threads/{thread}", timeout=30)
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        run: dict[str, Any] | None = response.json()["run"]
        return run


@dataclasses.dataclass
class Case:
    """One request to fuzz: where it goes and its valid body (for a thread set up for it)."""

    kind: Kind
    thread: str
    path: str
    body: Any
    #: the run a continuation answers, as it stood before (a refusal leaves it so)
    before: dict[str, Any] | None = None


def _agui(thread: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "r-1",
        "state": {"draft": "x"},
        "messages": messages,
        "tools": [],
        "context": [{"description": "page", "value": "home"}],
        "forwardedProps": {"origin": "edge"},
        **extra,
    }


def _user(thread: str, text: str) -> dict[str, Any]:
    return {"id": f"u-{thread}", "role": "user", "content": text}


def _vercel(thread: str, messages: list[Any]) -> dict[str, Any]:
    return {"id": thread, "trigger": "submit-message", "messages": messages}


def _vercel_user(thread: str, text: str) -> dict[str, Any]:
    return {"id": f"u-{thread}", "role": "user", "parts": [{"type": "text", "text": text}]}


def _suspended(stack: Stack, thread: str) -> dict[str, Any]:
    run = stack.run(thread)
    assert run is not None and run["status"] == "suspended", run
    return run


def native_turn(stack: Stack, thread: str) -> Case:
    return Case("turn", thread, f"/api/threads/{thread}/messages", {"content": "hello"})


def native_results(stack: Stack, thread: str) -> Case:
    stack.turn(f"/api/threads/{thread}/messages", {"content": "What is the title?"})
    body = {"call_t": {"result": "Home"}}
    path = f"/api/threads/{thread}/tool-results"
    return Case("continue", thread, path, body, _suspended(stack, thread))


def native_approvals(stack: Stack, thread: str) -> Case:
    stack.turn(f"/api/threads/{thread}/messages", {"content": "Delete the report"})
    body = {"call_d": {"approved": True, "reason": "fine"}}
    path = f"/api/threads/{thread}/approvals"
    return Case("continue", thread, path, body, _suspended(stack, thread))


def agui_turn(stack: Stack, thread: str) -> Case:
    earlier = {"id": f"a-{thread}", "role": "assistant", "content": "Earlier answer."}
    body = _agui(thread, [earlier, _user(thread, "hello")])
    return Case("turn", thread, "/agui", body)


def agui_tool_result(stack: Stack, thread: str) -> Case:
    user = _user(thread, "What is the title?")
    stack.turn("/agui", _agui(thread, [user]))
    answer = {"id": f"t-{thread}", "role": "tool", "toolCallId": "call_t", "content": "Home"}
    return Case(
        "continue", thread, "/agui", _agui(thread, [user, answer]), _suspended(stack, thread)
    )


def agui_resume(stack: Stack, thread: str) -> Case:
    user = _user(thread, "Delete the report")
    stack.turn("/agui", _agui(thread, [user]))
    resume = [{"interruptId": "call_d", "status": "resolved", "payload": {"approved": True}}]
    body = _agui(thread, [user], resume=resume)
    return Case("continue", thread, "/agui", body, _suspended(stack, thread))


def vercel_turn(stack: Stack, thread: str) -> Case:
    return Case("turn", thread, "/api/chat", _vercel(thread, [_vercel_user(thread, "hello")]))


def vercel_answer(stack: Stack, thread: str) -> Case:
    user = _vercel_user(thread, "What is the title?")
    stack.turn("/api/chat", _vercel(thread, [user]))
    reloaded = stack.session.get(f"{stack.url}/api/chat/{thread}", timeout=30).json()["messages"]
    assistant = reloaded[-1]
    for part in assistant["parts"]:
        if part.get("toolCallId") == "call_t":
            part.update(state="output-available", output="Home")
    body = _vercel(thread, [user, assistant])
    return Case("continue", thread, "/api/chat", body, _suspended(stack, thread))


def chat_stop(stack: Stack, thread: str) -> Case:
    stack.turn("/api/chat", _vercel(thread, [_vercel_user(thread, "hello")]))
    return Case("stop", thread, f"/api/chat/{thread}/stop", {"activeStreamId": "0" * 32})


def agui_connect(stack: Stack, thread: str) -> Case:
    stack.turn(f"/api/threads/{thread}/messages", {"content": "hello"})
    body = _agui(thread, [_user(thread, "hello")])
    return Case("connect", thread, "/agui/connect", body)


ROUTES: dict[str, Callable[[Stack, str], Case]] = {
    f.__name__: f
    for f in (
        native_turn,
        native_results,
        native_approvals,
        agui_turn,
        agui_tool_result,
        agui_resume,
        vercel_turn,
        vercel_answer,
        chat_stop,
        agui_connect,
    )
}


def fields(body: Any, at: FieldPath = ()) -> Iterator[tuple[FieldPath, bool]]:
    """Every value's path in ``body``, and whether it holds keys (an object)."""
    yield at, isinstance(body, dict)
    if isinstance(body, dict):
        for key, value in body.items():
            yield from fields(value, (*at, key))
    elif isinstance(body, list):
        for index, value in enumerate(body):
            yield from fields(value, (*at, index))


def mutated(body: Any, at: FieldPath, how: str, text: str) -> Any:
    """A copy of ``body`` with ``text`` put at ``at``: the value replaced or extended
    (``how``), or for ``"key"`` a key ``text`` added to the object there."""
    copied = copy.deepcopy(body)
    if how == "key":
        target = copied
        for step in at:
            target = target[step]
        target[text] = "x"
        return copied
    parent = copied
    for step in at[:-1]:
        parent = parent[step]
    old = parent[at[-1]]
    parent[at[-1]] = old + text if how == "append" and isinstance(old, str) else text
    return copied


#: the last event of a stream whose turn went as it should
def _finished(path: str, events: list[dict[str, Any]]) -> bool:
    if not events:
        return False
    last = events[-1]
    if path.startswith("/api/threads/"):
        return last["type"] == "done" and last["status"] in ("completed", "interrupted")
    if path == "/api/chat":
        return bool(last["type"] == "finish")
    return bool(last["type"] == "RUN_FINISHED")


@dataclasses.dataclass
class Fuzzer:
    stack: Stack
    build: Callable[[Stack, str], Case]
    case: Case | None = None
    sent: int = 0

    def current(self) -> Case:
        """The route's set-up request, set up again once an accepted one used it up."""
        if self.case is None:
            self.case = self.build(self.stack, self.stack.thread())
        return self.case

    def send(self, at: FieldPath, how: str, text: str) -> None:
        case = self.current()
        body = mutated(case.body, at, how, text)
        self.sent += 1
        began = time.monotonic()
        response = self.stack.post(case.path, body)
        status = response.status_code
        what = f"{case.path} with {text!r} at {at} ({how})"
        assert status < 500, f"{what}: {status} {response.text[:300]}"
        if status >= 400:
            assert response.headers["Content-Type"] == "application/json", what
            # {"error", "type"}, and a stable code where one applies
            assert set(response.json()) - {"code"} == {"error", "type"}, what
            self._unchanged(case, what)
            return
        self.case = None if case.kind in ("turn", "continue") else case
        if case.kind == "stop":
            assert status == 200 and response.json()["success"] is True, what
            return
        assert status == 200, f"{what}: {status} {response.text[:300]}"
        events = self.stack.events(response)
        # Far sooner than the relay's timeout: a stream that went quiet would end only then.
        took = time.monotonic() - began
        assert took < RELAY_TIMEOUT, f"{what}: quiet until the relay gave up ({took:.1f} s)"
        assert _finished(case.path, events), f"{what}: ended with {events[-3:]}"

    def _unchanged(self, case: Case, what: str) -> None:
        run = self.stack.run(case.thread)
        if case.kind == "turn":
            assert run is None, f"{what}: refused, yet thread {case.thread} exists"
        elif case.kind == "continue":
            assert run == case.before, f"{what}: refused, yet the run changed to {run}"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
) -> Iterator[Stack]:
    env = {"RELAYLINE_RELAY_TIMEOUT": str(int(RELAY_TIMEOUT))}
    with stack_on_database(request, tmp_path_factory, redis_databases, "edge text", env) as on:
        yield Stack(on.web)


@pytest.fixture(scope="module")
def fuzzers(stack: Stack) -> dict[str, Fuzzer]:
    return {name: Fuzzer(stack, build) for name, build in ROUTES.items()}


@pytest.mark.parametrize("route", list(ROUTES))
@EDGE
@given(text=nasty, how=st.sampled_from(["replace", "append"]))
def test_bad_text_in_any_field_is_a_4xx_or_a_finished_turn(
    fuzzers: dict[str, Fuzzer], route: str, text: str, how: str
) -> None:
    fuzzer = fuzzers[route]
    for at, is_object in list(fields(fuzzer.current().body)):
        if at:
            fuzzer.send(at, how, text)
        if is_object:
            fuzzer.send(at, "key", text)
