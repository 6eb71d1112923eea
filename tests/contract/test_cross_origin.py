"""Pages on one origin calling relayline on another (issue 33: CORS, web.cors) in
headless Chromium: ``useChat`` (``@ai-sdk/react``) and ``@ag-ui/client``, built with Vite
from ``tests/contract/cross_origin`` and served by a static server on their own port,
against relayline's own app (``create_app``, RELAYLINE_AUTH=token, RELAYLINE_CORS_ORIGINS
naming the page's origin) and against a host application that signs users in with a
session cookie and embeds relayline under /ai (credentials), with a real Celery worker,
Redis and SQLite. The same pages on a third, unlisted origin get nothing. The scenarios
live in the Node suite ``tests/contract/cross_origin/*.test.mjs``; this module builds and
serves the pages, starts the stack and requires every Node test to pass."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask, request, session

from relayline import Relayline
from relayline.shared.auth import mint_token
from tests.support import contract_pages
from tests.support.host_app import HostServer
from tests.support.node_suites import NPM_CI_TIMEOUT, install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = [pytest.mark.integration, pytest.mark.contract]

PAGES_DIR = Path(__file__).parent / "cross_origin"
PAGE_SOURCES = ("index.html", "agui.html", "vite.config.js", "package-lock.json", "src")
CHROMIUM = Path("/usr/bin/chromium")
SECRET = "the-cross-origin-suite-secret-of-32-chars"
SUITE_TIMEOUT = 300.0


@dataclass(frozen=True)
class CrossOriginStack:
    base_url: str
    page_url: str
    foreign_page_url: str
    token: str
    cookie_host_url: str


def cookie_host(env: dict[str, str], page_origin: str) -> Flask:
    """A host application that keeps who is signed in in its session cookie (as
    Flask-Login does) and embeds relayline under /ai for the page's origin."""
    app = Flask("cross_origin_host")
    app.config["SECRET_KEY"] = "the-host-session-secret"
    app.config.update(
        {
            "RELAYLINE_DATABASE_URL": env["DATABASE_URL"],
            "RELAYLINE_REDIS_URL": env["REDIS_URL"],
            "RELAYLINE_AGENT": env["RELAYLINE_AGENT"],
            "RELAYLINE_CORS_ORIGINS": [page_origin],
        }
    )

    @app.get("/login")
    def login() -> str:
        session["user"] = request.args["user"]
        return f"signed in as {session['user']}"

    Relayline(app, url_prefix="/ai", current_user=lambda: session.get("user"))
    return app


@pytest.fixture(scope="module")
def pages(node: str) -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} was not found: the cross-origin suite drives Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium).",
            pytrace=False,
        )
    install_node_packages(PAGES_DIR)
    return contract_pages.build(node, PAGES_DIR, PAGE_SOURCES)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases, pages: Path
) -> Iterator[CrossOriginStack]:
    counts = tmp_path_factory.mktemp("cross-origin")
    with (
        redis_databases.database("cross-origin stack") as redis_url,
        contract_pages.served(pages) as page_url,
        contract_pages.served(pages) as foreign_page_url,
    ):
        env = fresh_env(
            counts,
            redis_url,
            RELAYLINE_AGENT="tests.contract.vercel_agent:vercel_spec",
            RELAYLINE_AUTH="token",
            SECRET_KEY=SECRET,
            RELAYLINE_CORS_ORIGINS=page_url,  # the foreign page's origin is not listed
        )
        worker = Worker(env, "cross-origin-w0")
        try:
            web = WebServer(env)
            host = HostServer(cookie_host(env, page_url))
            try:
                token = mint_token(SECRET, "page-user")
                yield CrossOriginStack(web.url, page_url, foreign_page_url, token, host.url)
            finally:
                host.stop()
                web.stop()
        finally:
            worker.stop()


@pytest.mark.timeout(NPM_CI_TIMEOUT + contract_pages.BUILD_TIMEOUT + SUITE_TIMEOUT + 120)
def test_pages_on_another_origin_chat_stop_and_resume_in_chromium(
    node: str, stack: CrossOriginStack
) -> None:
    files = sorted(PAGES_DIR.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {PAGES_DIR}"
    done, summary = run_node_tests(
        node,
        PAGES_DIR,
        files,
        env={
            "RELAYLINE_BASE_URL": stack.base_url,
            "RELAYLINE_PAGE_URL": stack.page_url,
            "RELAYLINE_FOREIGN_PAGE_URL": stack.foreign_page_url,
            "RELAYLINE_TOKEN": stack.token,
            "RELAYLINE_COOKIE_HOST_URL": stack.cookie_host_url,
            "RELAYLINE_CHROMIUM": str(CHROMIUM),
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
