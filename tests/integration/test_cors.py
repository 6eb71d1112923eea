"""CORS (issue 33; web.cors) over real HTTP, with a real worker running the turns:
RELAYLINE_CORS_ORIGINS lists the other origins whose pages may call relayline, on a host
application that signs users in with a session cookie (relayline mounted under /ai,
credentials allowed) and on relayline's own app with bearer tokens (no credentials).
The host's own routes get no CORS from relayline, unlisted origins are refused at the
preflight with one log line, and the list is empty (CORS off) by default. What a browser
does with these answers is tests/contract/test_cross_origin.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from flask import Flask, request, session

from relayline import Relayline
from relayline.shared.auth import mint_token
from relayline.web.cors import ALLOW_HEADERS, EXPOSE_HEADERS
from tests.support.host_app import HostServer
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = pytest.mark.integration

PAGE = "http://localhost:3000"  # a Next.js dev server, say
FOREIGN = "https://evil.example"
SECRET = "a-secret-of-at-least-32-characters-long"


def preflight(
    url: str, origin: str, method: str = "POST", headers: str = "content-type"
) -> requests.Response:
    """What a browser sends before a non-simple cross-origin request."""
    return requests.options(
        url,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers,
        },
        timeout=10,
    )


def listed(header: str | None) -> set[str]:
    return {item.strip().lower() for item in (header or "").split(",") if item.strip()}


@dataclass
class CookieHost:
    server: HostServer

    def route(self, path: str) -> str:
        return f"{self.server.url}/ai{path}"


def cookie_host_app(env: dict[str, str]) -> Flask:
    app = Flask("cors_host")
    app.config["SECRET_KEY"] = "the-host-session-secret"
    app.config.update(
        {
            "RELAYLINE_DATABASE_URL": env["DATABASE_URL"],
            "RELAYLINE_REDIS_URL": env["REDIS_URL"],
            "RELAYLINE_AGENT": env["RELAYLINE_AGENT"],
            "RELAYLINE_CORS_ORIGINS": [PAGE],
        }
    )

    @app.post("/login")
    def login() -> str:
        session["user"] = request.form["user"]
        return "signed in"

    @app.get("/hello")
    def hello() -> str:  # the host's own route: relayline's CORS is not the host's
        return "hello"

    Relayline(app, url_prefix="/ai", current_user=lambda: session.get("user"))
    return app


@pytest.fixture(scope="module")
def worker_env(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[dict[str, str]]:
    counts = tmp_path_factory.mktemp("cors")
    with redis_databases.database("cors") as redis_url:
        env = fresh_env(counts, redis_url)
        worker = Worker(env, "w0")
        try:
            yield env
        finally:
            worker.stop()


@pytest.fixture(scope="module")
def host(worker_env: dict[str, str]) -> Iterator[CookieHost]:
    server = HostServer(cookie_host_app(worker_env))
    try:
        yield CookieHost(server)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def token_web(worker_env: dict[str, str]) -> Iterator[WebServer]:
    web = WebServer(
        {
            **worker_env,
            "RELAYLINE_AUTH": "token",
            "SECRET_KEY": SECRET,
            "RELAYLINE_CORS_ORIGINS": PAGE,
        }
    )
    try:
        yield web
    finally:
        web.stop()


def test_a_listed_page_may_call_the_embedded_routes_with_the_host_cookie(host: CookieHost) -> None:
    messages = host.route("/api/threads/c-1/messages")
    asked = preflight(messages, PAGE)
    assert asked.status_code == 200, asked.text
    assert asked.headers["Access-Control-Allow-Origin"] == PAGE
    assert asked.headers["Access-Control-Allow-Credentials"] == "true"
    methods = {m.upper() for m in listed(asked.headers["Access-Control-Allow-Methods"])}
    assert methods == {"GET", "HEAD", "POST", "DELETE", "OPTIONS"}
    assert listed(asked.headers["Access-Control-Allow-Headers"]) == {"content-type"}
    assert asked.headers["Access-Control-Max-Age"] == "600"
    assert "origin" in listed(asked.headers.get("Vary"))

    browser = requests.Session()
    assert browser.post(f"{host.server.url}/login", data={"user": "ann"}, timeout=10).ok
    sent = browser.post(
        messages,
        json={"content": "hello"},
        headers={"Origin": PAGE},  # the page's credentialed fetch
        timeout=60,
    )
    assert sent.status_code == 200, sent.text
    assert events_of(sent.text)[-1]["type"] == "done"
    assert sent.headers["Access-Control-Allow-Origin"] == PAGE
    assert sent.headers["Access-Control-Allow-Credentials"] == "true"
    exposed = listed(sent.headers["Access-Control-Expose-Headers"])
    assert exposed == {name.lower() for name in EXPOSE_HEADERS}
    # A refusal is readable by the page too (its JSON says why).
    missing = browser.get(host.route("/api/threads/nobody-s"), headers={"Origin": PAGE}, timeout=10)
    assert missing.status_code == 404
    assert missing.headers["Access-Control-Allow-Origin"] == PAGE


def test_the_host_routes_get_no_cors_from_relayline(host: CookieHost) -> None:
    own = requests.get(f"{host.server.url}/hello", headers={"Origin": PAGE}, timeout=10)
    assert own.status_code == 200
    assert "Access-Control-Allow-Origin" not in own.headers
    asked = preflight(f"{host.server.url}/hello", PAGE, method="GET")
    assert "Access-Control-Allow-Origin" not in asked.headers
    assert asked.status_code == 200  # the host's own answer, not relayline's refusal


def test_an_unlisted_origin_is_refused_at_the_preflight_with_one_log_line(
    host: CookieHost, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="relayline.web")
    asked = preflight(host.route("/api/chat"), FOREIGN)
    assert asked.status_code == 403
    assert asked.json() == {
        "error": f"A page of {FOREIGN!r} may not call this server: it is not one of "
        "RELAYLINE_CORS_ORIGINS (comma-separated scheme://host[:port]).",
        "type": "CorsOriginNotAllowed",
    }
    assert "Access-Control-Allow-Origin" not in asked.headers
    lines = [r.getMessage() for r in caplog.records if r.name == "relayline.web"]
    assert lines == [
        f"cross-site refusal CorsOriginNotAllowed: OPTIONS /ai/api/chat, Origin {FOREIGN!r}"
    ]
    # A simple request from it is answered without CORS headers: the browser hides it.
    read = requests.get(host.route("/healthz"), headers={"Origin": FOREIGN}, timeout=10)
    assert "Access-Control-Allow-Origin" not in read.headers


def test_bearer_tokens_cross_origins_without_credentials(token_web: WebServer) -> None:
    asked = preflight(
        f"{token_web.url}/api/chat", PAGE, headers="authorization,content-type,last-event-id"
    )
    assert asked.status_code == 200, asked.text
    assert asked.headers["Access-Control-Allow-Origin"] == PAGE
    assert "Access-Control-Allow-Credentials" not in asked.headers
    assert listed(asked.headers["Access-Control-Allow-Headers"]) == {
        name.lower() for name in ALLOW_HEADERS
    }
    token = mint_token(SECRET, "bea")
    chat = requests.post(
        f"{token_web.url}/api/chat",
        json={
            "id": "t-cors",
            "trigger": "submit-message",
            "messages": [
                {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
            ],
        },
        headers={"Origin": PAGE, "Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert chat.status_code == 200, chat.text
    assert chat.headers["Access-Control-Allow-Origin"] == PAGE
    assert "Access-Control-Allow-Credentials" not in chat.headers
    exposed = listed(chat.headers["Access-Control-Expose-Headers"])
    assert {"x-relayline-stream-id", "x-vercel-ai-ui-message-stream"} <= exposed
    assert chat.headers["X-Relayline-Stream-Id"]
    refused = requests.get(f"{token_web.url}/api/threads", headers={"Origin": PAGE}, timeout=10)
    assert refused.status_code == 401
    assert refused.headers["Access-Control-Allow-Origin"] == PAGE  # the page reads why
    assert "www-authenticate" in listed(refused.headers["Access-Control-Expose-Headers"])


def test_cors_is_off_by_default(worker_env: dict[str, str]) -> None:
    env = {k: v for k, v in worker_env.items() if k != "RELAYLINE_CORS_ORIGINS"}
    web = WebServer(env)
    try:
        read = requests.get(f"{web.url}/healthz", headers={"Origin": PAGE}, timeout=10)
        assert read.status_code == 200
        assert not any(h.lower().startswith("access-control-") for h in read.headers)
        asked = preflight(f"{web.url}/api/chat", PAGE)
        assert asked.status_code == 403 and asked.json()["type"] == "CorsOriginNotAllowed"
        # Same-origin pages need none of it: no preflight, no Origin rule without cookies.
        own = requests.post(
            f"{web.url}/api/threads/d-1/messages",
            json={"content": "hello"},
            headers={"Origin": web.url},
            timeout=60,
        )
        assert own.status_code == 200, own.text
    finally:
        web.stop()
