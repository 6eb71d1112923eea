"""Browser contract pages (the Vite + React pages under tests/contract/ that a suite
drives in Chromium): build one with ``vite build`` when its sources changed, and serve
it beside the web app on the app's own origin, as a deployed frontend talks to it."""

from __future__ import annotations

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


def _newest_source(page: Path) -> float:
    newest = 0.0
    for path in [*page.glob("*.html"), *(page / name for name in PAGE_SOURCES)]:
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def build_page(node: str, page: Path) -> Path:
    """``vite build`` of ``page`` into its ``build/`` unless the build is newer than
    every source; the build directory."""
    build = page / "build"
    index = build / "index.html"
    if index.is_file() and index.stat().st_mtime >= _newest_source(page):
        return build
    done = subprocess.run(
        [node, "node_modules/vite/bin/vite.js", "build"],
        cwd=page,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if done.returncode != 0 or not index.is_file():
        pytest.fail(
            f"vite build failed in {page} (exit {done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    return build


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
