"""``useChat`` from ``@ai-sdk/react`` (``ai`` 7) in headless Chromium against ``POST
/api/chat`` of the running stack: a real Celery worker, the web app on a real port,
Redis and a SQLite database. The page (``tests/contract/vercel/src``, built with Vite)
is served by the web app's own server, mounted beside the app by a WSGI middleware, so
it talks to ``/api/chat`` on its own origin exactly as a deployed frontend would. The
scenarios (reference catalogue J 183-186) live in the Node suite
``tests/contract/vercel/*.test.mjs``, driven by playwright-core; this module installs
and builds the page, starts the stack once and requires every Node test to pass.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from werkzeug.middleware.shared_data import SharedDataMiddleware
from werkzeug.serving import make_server

from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.node_suites import NPM_CI_TIMEOUT, install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env

pytestmark = [pytest.mark.integration, pytest.mark.contract]

VERCEL_DIR = Path(__file__).parent / "vercel"
BUILD_DIR = VERCEL_DIR / "build"
#: what the built page depends on: a change to any of these rebuilds it
PAGE_SOURCES = ("index.html", "vite.config.js", "package-lock.json", "src")
#: where the web app's server mounts the built page
PAGE_PATH = "/contract-page"
CHROMIUM = Path("/usr/bin/chromium")
#: seconds the Vite build and the whole Node suite may take (the CPU is loaded at times)
BUILD_TIMEOUT = 180.0
SUITE_TIMEOUT = 780.0


@dataclasses.dataclass(frozen=True)
class ContractStack:
    base_url: str
    page_url: str
    counts: Path


def _newest_source() -> float:
    newest = 0.0
    for name in PAGE_SOURCES:
        path = VERCEL_DIR / name
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def build_page(node: str) -> Path:
    """``vite build`` into ``build/`` unless the build is newer than every source."""
    index = BUILD_DIR / "index.html"
    if index.is_file() and index.stat().st_mtime >= _newest_source():
        return BUILD_DIR
    done = subprocess.run(
        [node, "node_modules/vite/bin/vite.js", "build"],
        cwd=VERCEL_DIR,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if done.returncode != 0 or not index.is_file():
        pytest.fail(
            f"vite build failed in {VERCEL_DIR} (exit {done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    return BUILD_DIR


@contextmanager
def web_with_page(env: dict[str, str], page_dir: Path) -> Iterator[str]:
    """The web app on a free port, with the built page under PAGE_PATH on the same
    origin (no proxy, no CORS). Yields the base URL."""
    app = create_app(Settings.from_env(env))
    with_page = SharedDataMiddleware(app, {PAGE_PATH: str(page_dir)}, cache=False)
    server = make_server("127.0.0.1", 0, with_page, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
        app.extensions["relayline"].close()


@pytest.fixture(scope="module")
def vercel_page(node: str) -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} was not found: the Vercel contract suite drives Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium).",
            pytrace=False,
        )
    install_node_packages(VERCEL_DIR)
    return build_page(node)


@pytest.fixture(scope="module")
def contract_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases, vercel_page: Path
) -> Iterator[ContractStack]:
    counts = tmp_path_factory.mktemp("vercel-contract")
    with redis_databases.database("Vercel contract stack") as redis_url:
        env = fresh_env(
            counts, redis_url, RELAYLINE_AGENT="tests.contract.vercel_agent:vercel_spec"
        )
        worker = Worker(env, "vercel-w0")
        try:
            with web_with_page(env, vercel_page) as base_url:
                yield ContractStack(base_url, f"{base_url}{PAGE_PATH}/index.html", counts)
        finally:
            worker.stop()


@pytest.mark.timeout(NPM_CI_TIMEOUT + BUILD_TIMEOUT + SUITE_TIMEOUT + 120)
def test_use_chat_in_chromium_passes_the_contract_suite(
    node: str, contract_stack: ContractStack
) -> None:
    files = sorted(VERCEL_DIR.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {VERCEL_DIR}"
    done, summary = run_node_tests(
        node,
        VERCEL_DIR,
        files,
        env={
            "RELAYLINE_BASE_URL": contract_stack.base_url,
            "RELAYLINE_PAGE_URL": contract_stack.page_url,
            "RELAYLINE_TEST_COUNTS": str(contract_stack.counts),
            "RELAYLINE_CHROMIUM": str(CHROMIUM),
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
    # What the stop tests measured (their TAP diagnostics; `pytest -rP` shows them).
    for line in re.findall(r"^\s*# (measured: .*)$", done.stdout, flags=re.MULTILINE):
        print(line)
