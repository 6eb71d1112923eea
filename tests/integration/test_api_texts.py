"""What a refused request says (issue 32, part 5), against the running stack (a real
Celery worker, the web app on a real port, token authorization): each refusal's status,
its stable ``code`` and a text that says what to do.

- a malformed approval is 400 ``MALFORMED_ANSWER`` (was a 409 conflict);
- a body without its thread id says "threadId is required" (``THREAD_ID_REQUIRED``;
  was "Invalid thread id None");
- a body over the limit is 413 ``BODY_TOO_LARGE`` and states the limit;
- a new turn on a busy thread is 409 ``THREAD_BUSY`` and says how to queue it
  (``multitask``) or stop the run;
- an expired token says it expired (``TOKEN_EXPIRED``), a garbled one does not
  (``TOKEN_INVALID``);
- AG-UI interrupts carry public reasons (``tool_results``, ``confirmation``), never the
  reference's internal ``neuron:wait_for_event``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from relayline.shared.auth import mint, mint_token
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration

SECRET = "api-texts-secret-" + "x" * 24
USER = "ann"


@pytest.fixture(scope="module")
def web(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[WebServer]:
    counts = tmp_path_factory.mktemp("api-texts")
    with (
        redis_databases.database("API texts") as redis_url,
        running_stack(fresh_env(counts, redis_url, RELAYLINE_AUTH="token", SECRET_KEY=SECRET)) as (
            server,
            _workers,
        ),
    ):
        yield server


def auth(token: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token or mint_token(SECRET, USER)}"}


def post(web: WebServer, path: str, body: Any, token: str | None = None) -> requests.Response:
    return requests.post(web.url + path, json=body, headers=auth(token), timeout=60)


def refusal(response: requests.Response, status: int, code: str) -> str:
    """The refusal's text, once its status and code are the expected ones."""
    body = response.json()
    assert (response.status_code, body.get("code")) == (status, code), body
    return str(body["error"])


def suspended_on_approval(web: WebServer, thread: str) -> str:
    """A thread whose run waits for a person's approval; the call id it waits on."""
    events = events_of(post(web, f"/api/threads/{thread}/messages", {"content": "erase"}).text)
    interrupt = next(e for e in events if e["type"] == "interrupt")
    return str(interrupt["request"]["actions"][0]["id"])


def test_a_malformed_approval_is_a_400_naming_the_shapes(web: WebServer) -> None:
    call_id = suspended_on_approval(web, "texts-approval")
    for answer in ("maybe", ["approve", "why"], 3):
        response = post(web, "/api/threads/texts-approval/approvals", {call_id: answer})
        text = refusal(response, 400, "MALFORMED_ANSWER")
        assert '"approve", "reject" or ["reject", "<reason>"]' in text
    # Refused before anything was sent: the run still waits, and a good answer runs it.
    thread = requests.get(f"{web.url}/api/threads/texts-approval", headers=auth(), timeout=10)
    assert thread.json()["run"]["status"] == "suspended"
    done = post(web, "/api/threads/texts-approval/approvals", {call_id: "approve"})
    assert events_of(done.text)[-1]["status"] == "completed"


def test_a_busy_thread_says_how_to_queue_or_stop(web: WebServer) -> None:
    suspended_on_approval(web, "texts-busy")
    response = post(web, "/api/threads/texts-busy/messages", {"content": "hello"})
    text = refusal(response, 409, "THREAD_BUSY")
    assert "waits for an answer" in text
    assert "?multitask=enqueue" in text  # how to queue it
    assert "?multitask=interrupt" in text and "/api/threads/texts-busy/cancel" in text  # stop


def test_a_missing_thread_id_is_required_not_invalid(web: WebServer) -> None:
    agui = {"runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    text = refusal(post(web, "/agui", agui), 400, "THREAD_ID_REQUIRED")
    assert text.startswith("threadId is required")
    parts = [{"type": "text", "text": "hi"}]
    vercel = {"messages": [{"id": "u1", "role": "user", "parts": parts}]}
    text = refusal(post(web, "/api/chat", vercel), 400, "THREAD_ID_REQUIRED")
    assert text.startswith("id is required")
    # A present but unusable id is still "invalid", with its own code.
    bad = refusal(post(web, "/agui", {**agui, "threadId": "no spaces"}), 400, "THREAD_ID_INVALID")
    assert "Invalid thread id 'no spaces'" in bad


def test_an_oversize_body_states_the_limit(web: WebServer) -> None:
    body = {"content": "x" * (1024 * 1024 + 1)}
    text = refusal(post(web, "/api/threads/texts-big/messages", body), 413, "BODY_TOO_LARGE")
    assert "1048576 bytes (1 MiB)" in text


def test_an_expired_token_says_expired(web: WebServer) -> None:
    lapsed = mint(SECRET, USER, ttl=60, now=time.time() - 3600).token
    response = requests.get(f"{web.url}/api/threads", headers=auth(lapsed), timeout=10)
    assert "expired" in refusal(response, 401, "TOKEN_EXPIRED")
    garbled = requests.get(f"{web.url}/api/threads", headers=auth("not-a-token"), timeout=10)
    assert "expired" not in refusal(garbled, 401, "TOKEN_INVALID")
    # Signed with another secret: not ours, expired or not.
    foreign = mint("another-secret-of-at-least-32-chars!", USER, ttl=60, now=time.time() - 3600)
    response = requests.get(f"{web.url}/api/threads", headers=auth(foreign.token), timeout=10)
    refusal(response, 401, "TOKEN_INVALID")
    missing = requests.get(f"{web.url}/api/threads", timeout=10)
    refusal(missing, 401, "TOKEN_MISSING")


def test_agui_interrupts_have_public_reasons(web: WebServer) -> None:
    # "delete": an approval and a frontend tool, so the reload shows both kinds.
    post(web, "/api/threads/texts-reasons/messages", {"content": "delete it"})
    page = requests.get(f"{web.url}/agui/threads/texts-reasons", headers=auth(), timeout=10)
    reasons = [interrupt["reason"] for interrupt in page.json()["interrupts"]]
    assert reasons == ["confirmation"]
    call_id = "call_d"
    post(web, "/api/threads/texts-reasons/approvals", {call_id: "approve"})
    page = requests.get(f"{web.url}/agui/threads/texts-reasons", headers=auth(), timeout=10)
    reasons = [interrupt["reason"] for interrupt in page.json()["interrupts"]]
    assert reasons == ["tool_results"]
