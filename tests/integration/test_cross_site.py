"""Cross-site protection (issue 34, fault 3; web.cross_site), on a host application that
signs its users in with a session cookie, relayline mounted under /ai, and a real worker
running the turns.

A page of another site can make the browser send a simple request (text/plain, a form,
an untyped body, no body) with the host's cookie and without a preflight. Such a request
never changes anything: a body of another type than the route's is a 415, and a page of
a foreign origin is a 403, so the approval-gated tool does not run. The host's own
pages, the origins in RELAYLINE_CORS_ORIGINS and non-browser clients still act."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask, request, session

from relayline import Relayline
from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.agents import count
from tests.support.host_app import HostServer
from tests.support.http_app import PUSH_ENV
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of
from tests.support.stack import Worker, fresh_env

pytestmark = pytest.mark.integration

ALLOWED = "https://app.example"
FOREIGN = "https://evil.example"
APPROVE = '{"call_d": "approve"}'


@dataclass
class Host:
    server: HostServer
    counts: Path

    @property
    def url(self) -> str:
        return self.server.url

    def route(self, path: str) -> str:
        return f"{self.server.url}/ai{path}"

    def signed_in(self, user: str) -> requests.Session:
        browser = requests.Session()
        answer = browser.post(f"{self.url}/login", data={"user": user}, timeout=10)
        assert answer.status_code == 200 and answer.text == f"signed in as {user}"
        return browser

    def deletions(self) -> int:
        """How often the approval-gated tool ran (tests.support.agents.delete_file)."""
        return count(self.counts, "tool.delete_file")


def host_app(env: dict[str, str]) -> Flask:
    """A host that keeps who is signed in in its session cookie, as Flask-Login does."""
    app = Flask("cookie_host")
    app.config["SECRET_KEY"] = "the-host-session-secret"
    app.config.update(
        {
            "RELAYLINE_DATABASE_URL": env["DATABASE_URL"],
            "RELAYLINE_REDIS_URL": env["REDIS_URL"],
            "RELAYLINE_AGENT": env["RELAYLINE_AGENT"],
            "RELAYLINE_CORS_ORIGINS": [ALLOWED],
            **{f"RELAYLINE_{name}": value for name, value in PUSH_ENV.items()},
        }
    )

    @app.post("/login")
    def login() -> str:
        session["user"] = request.form["user"]
        return f"signed in as {session['user']}"

    Relayline(app, url_prefix="/ai", current_user=lambda: session.get("user"))
    return app


@pytest.fixture(scope="module")
def host(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[Host]:
    counts = tmp_path_factory.mktemp("cross-site")
    with redis_databases.database("cross-site") as redis_url:
        env = fresh_env(counts, redis_url)
        worker = Worker(env, "w0")
        try:
            server = HostServer(host_app(env))
            try:
                yield Host(server, counts)
            finally:
                server.stop()
        finally:
            worker.stop()


def suspended_on_approval(host: Host, browser: requests.Session, thread: str) -> None:
    """A turn that waits for the person's approval of delete_file (call_d)."""
    asked = browser.post(
        host.route(f"/api/threads/{thread}/messages"),
        json={"content": "Delete the report"},
        headers={"Origin": host.url},  # the host's own page
        timeout=60,
    )
    assert asked.status_code == 200, asked.text
    assert events_of(asked.text)[-1]["status"] == "interrupted"
    assert run_of(host, browser, thread)["status"] == "suspended"


def run_of(host: Host, browser: requests.Session, thread: str) -> dict[str, Any]:
    found: dict[str, Any] = browser.get(host.route(f"/api/threads/{thread}"), timeout=10).json()
    run: dict[str, Any] = found["run"]
    return run


def refusal(answer: requests.Response, status: int, kind: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["type"] == kind
    message: str = body["error"]
    return message


def test_a_text_plain_approval_is_refused_and_the_gated_tool_does_not_run(host: Host) -> None:
    ann = host.signed_in("ann")
    suspended_on_approval(host, ann, "x-plain")
    approvals = host.route("/api/threads/x-plain/approvals")
    # What a foreign page's fetch or form may send without a preflight: text/plain, a
    # form, an untyped body. Refused whichever page sent it, or none.
    for content_type in ("text/plain;charset=UTF-8", "application/x-www-form-urlencoded"):
        for origin in ({"Origin": FOREIGN}, {"Origin": host.url}, {}):
            headers = {"Content-Type": content_type, **origin}
            answer = ann.post(approvals, data=APPROVE, headers=headers, timeout=10)
            assert refusal(answer, 415, "UnsupportedMediaType") == (
                "This route takes a body of Content-Type application/json only, and this one "
                f"has Content-Type {content_type.split(';')[0]}: a page of any site could "
                "send it without the browser asking this server first."
            )
    untyped = requests.Request("POST", approvals, data=APPROVE.encode()).prepare()
    assert "Content-Type" not in untyped.headers
    answer = ann.send(untyped, timeout=10)
    assert "and this one has no Content-Type:" in refusal(answer, 415, "UnsupportedMediaType")
    assert host.deletions() == 0
    run = run_of(host, ann, "x-plain")
    assert run["status"] == "suspended" and run["interrupt"] is not None

    # The same decision as JSON from the host's own page runs the tool: the refusals
    # above are what kept it from running.
    approved = ann.post(approvals, data=APPROVE, headers=json_from(host.url), timeout=60)
    assert approved.status_code == 200, approved.text
    assert host.deletions() == 1
    results = [e for e in events_of(approved.text) if e["type"] == "tool-result"]
    assert [r["tool"]["result"] for r in results] == ["r.pdf deleted"]


def json_from(origin: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "Origin": origin}


def test_a_foreign_page_is_refused_whatever_it_sends(
    host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    ann = host.signed_in("ann")
    suspended_on_approval(host, ann, "x-foreign")
    before = host.deletions()
    caplog.set_level(logging.WARNING, logger="relayline.web")
    # JSON would need a preflight relayline never consents to; refused all the same.
    for origin in (FOREIGN, "null", "http://127.0.0.1:1", f"{host.url}.evil.example"):
        answer = ann.post(
            host.route("/api/threads/x-foreign/approvals"),
            data=APPROVE,
            headers=json_from(origin),
            timeout=10,
        )
        message = refusal(answer, 403, "ForeignOrigin")
        assert message == (
            f"A page of {origin!r} may not act for the signed-in user: only this server's "
            "own pages and the origins in RELAYLINE_CORS_ORIGINS may."
        )
    # What a form post or a fetch without a body gets through the media rule: a stop,
    # an erase, Pusher's form-encoded auth (which would claim a new thread).
    cancel = ann.post(
        host.route("/api/threads/x-foreign/cancel"), headers={"Origin": FOREIGN}, timeout=10
    )
    refusal(cancel, 403, "ForeignOrigin")
    erase = ann.delete(
        host.route("/api/threads/x-foreign"), headers={"Origin": FOREIGN}, timeout=10
    )
    refusal(erase, 403, "ForeignOrigin")
    form = {"socket_id": "1.2", "channel_name": "private-thread-x-claimed"}
    pusher = ann.post(
        host.route("/pusher/auth"), data=form, headers={"Origin": FOREIGN}, timeout=10
    )
    refusal(pusher, 403, "ForeignOrigin")

    assert host.deletions() == before
    assert run_of(host, ann, "x-foreign")["status"] == "suspended"  # neither stopped nor erased
    store = Store(host.server.app.extensions["relayline"].settings.database_url)
    try:
        assert store.thread("x-claimed") is None
    finally:
        store.dispose()
    # One operator line per refusal, with its reason code.
    lines = [r.getMessage() for r in caplog.records if r.name == "relayline.web"]
    assert len(lines) == 7
    assert all(line.startswith("cross-site refusal ForeignOrigin: ") for line in lines)
    assert f"POST /ai/api/threads/x-foreign/cancel, Origin {FOREIGN!r}" in lines[4]


def test_own_and_allowed_origins_and_non_browser_clients_act(host: Host) -> None:
    ann = host.signed_in("ann")
    form = {"socket_id": "1.2", "channel_name": "private-thread-x-pushed"}
    # pusher-js posts its auth form-encoded, from the page's own origin.
    own = ann.post(host.route("/pusher/auth"), data=form, headers={"Origin": host.url}, timeout=10)
    assert own.status_code == 200 and "auth" in own.json()
    for origin in (ALLOWED, "https://APP.example:443"):  # as listed, however spelled
        allowed = ann.post(
            host.route("/pusher/auth"), data=form, headers={"Origin": origin}, timeout=10
        )
        assert allowed.status_code == 200, allowed.text
    without_origin = ann.post(host.route("/pusher/auth"), data=form, timeout=10)
    assert without_origin.status_code == 200, without_origin.text
    # A stop without a body from the host's page, and from a client that is no browser.
    suspended_on_approval(host, ann, "x-own")
    for headers in ({"Origin": host.url}, {}):
        stop = ann.post(host.route("/api/threads/x-own/cancel"), headers=headers, timeout=10)
        assert stop.status_code == 200, stop.text
    assert run_of(host, ann, "x-own")["status"] == "cancelled"


@pytest.fixture
def standalone(tmp_path: Path, redis_url: str) -> Iterator[Flask]:
    """relayline's own app (RELAYLINE_AUTH=none, no worker): no cookie decides who asks."""
    env = fresh_env(tmp_path, redis_url)
    app = create_app(Settings.from_env(env))
    yield app
    app.extensions["relayline"].close()


def test_without_cookie_sign_in_the_media_rule_holds_and_origin_is_not_checked(
    standalone: Flask,
) -> None:
    client = standalone.test_client()
    plain = client.post(
        "/api/threads/s-1/messages", data='{"content": "hi"}', content_type="text/plain"
    )
    assert plain.status_code == 415 and plain.get_json()["type"] == "UnsupportedMediaType"
    # No ambient credential to misuse: a foreign page is answered as anyone (no thread).
    foreign = client.post("/api/threads/s-1/cancel", headers={"Origin": FOREIGN})
    assert foreign.status_code == 404 and foreign.get_json()["type"] == "NotFound"
