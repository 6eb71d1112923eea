"""Browser contract pages (the Vite + React pages under tests/contract/ that a suite
drives in Chromium): build one with ``vite build`` when its sources changed, serve it
on an origin of its own or beside the web app on the app's own origin (as a deployed
frontend talks to it), and require a page's Node suite to pass against a running stack."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from werkzeug.exceptions import NotFound
from werkzeug.middleware.shared_data import SharedDataMiddleware
from werkzeug.serving import make_server

from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.node_suites import run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

#: what a built page depends on (besides its *.html entries): a change rebuilds it
PAGE_SOURCES = ("vite.config.js", "package-lock.json", "src")
#: where the web app's server mounts the built page
PAGE_PATH = "/contract-page"
CHROMIUM = Path("/usr/bin/chromium")
#: seconds a Vite build may take (the CPU is loaded at times)
BUILD_TIMEOUT = 180.0


def require_chromium(suite: str) -> None:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} was not found: the {suite} contract suite drives Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium).",
            pytrace=False,
        )


def _newest(directory: Path, sources: Sequence[str]) -> float:
    newest = 0.0
    for name in sources:
        path = directory / name
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def build(node: str, directory: Path, sources: Sequence[str]) -> Path:
    """``vite build`` in ``directory`` into its ``build/`` unless the build is newer
    than every source; the build directory."""
    out = directory / "build"
    index = out / "index.html"
    if index.is_file() and index.stat().st_mtime >= _newest(directory, sources):
        return out
    done = subprocess.run(
        [node, "node_modules/vite/bin/vite.js", "build"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if done.returncode != 0 or not index.is_file():
        pytest.fail(
            f"vite build failed in {directory} (exit {done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    return out


def build_page(node: str, page: Path) -> Path:
    """A contract page's build: its *.html entries and PAGE_SOURCES are the sources."""
    entries = [path.name for path in page.glob("*.html")]
    return build(node, page, [*entries, *PAGE_SOURCES])


@contextmanager
def _serving(app: WSGIApplication) -> Iterator[str]:
    """``app`` on 127.0.0.1 and a free port; yields ``http://127.0.0.1:<port>``."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` as static files on a free port; yields its base URL (with a
    trailing ``/``): another port is another origin."""
    with _serving(SharedDataMiddleware(NotFound(), {"/": str(folder)}, cache=False)) as url:
        yield f"{url}/"


@contextmanager
def web_with_page(env: dict[str, str], page_dir: Path) -> Iterator[str]:
    """The web app on a free port, with the built page under PAGE_PATH on the same
    origin (no proxy, no CORS). Yields the base URL."""
    app = create_app(Settings.from_env(env))
    try:
        with _serving(SharedDataMiddleware(app, {PAGE_PATH: str(page_dir)}, cache=False)) as url:
            yield url
    finally:
        app.extensions["relayline"].close()


@dataclasses.dataclass(frozen=True)
class ContractStack:
    base_url: str
    page_url: str
    counts: Path


@contextmanager
def page_stack(
    counts: Path, redis_databases: RedisDatabases, page: Path, label: str, agent: str
) -> Iterator[ContractStack]:
    """A worker and the web app serving ``page`` (a build) on its own origin, with the
    agent ``agent`` (``module:attribute``) and a private Redis database."""
    with redis_databases.database(f"{label} contract stack") as redis_url:
        env = fresh_env(counts, redis_url, RELAYLINE_AGENT=agent)
        worker = Worker(env, f"{label}-w0")
        try:
            with web_with_page(env, page) as base_url:
                yield ContractStack(base_url, f"{base_url}{PAGE_PATH}/index.html", counts)
        finally:
            worker.stop()


def pass_page_suite(node: str, page_dir: Path, stack: ContractStack, timeout: float) -> None:
    """Run every ``*.test.mjs`` of ``page_dir`` against ``stack`` and require each to
    pass; print what the tests measured (their ``# measured:`` TAP diagnostics)."""
    files = sorted(page_dir.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {page_dir}"
    done, summary = run_node_tests(
        node,
        page_dir,
        files,
        env={
            "RELAYLINE_BASE_URL": stack.base_url,
            "RELAYLINE_PAGE_URL": stack.page_url,
            "RELAYLINE_TEST_COUNTS": str(stack.counts),
            "RELAYLINE_CHROMIUM": str(CHROMIUM),
        },
        timeout=timeout,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
    for line in re.findall(r"^\s*# (measured: .*)$", done.stdout, flags=re.MULTILINE):
        print(line)
