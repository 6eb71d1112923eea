"""A Vite-built test page (a contract suite's own npm package): ``vite build`` into its
``build/`` when a source is newer than the build, and a static server of that folder on
a free loopback port, which is an origin of its own."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from werkzeug.exceptions import NotFound
from werkzeug.middleware.shared_data import SharedDataMiddleware
from werkzeug.serving import make_server

#: seconds a Vite build may take (the CPU is loaded at times)
BUILD_TIMEOUT = 180.0


def _newest(directory: Path, sources: Sequence[str]) -> float:
    newest = 0.0
    for name in sources:
        path = directory / name
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def build(node: str, directory: Path, sources: Sequence[str]) -> Path:
    """``vite build`` in ``directory`` unless ``build/`` is newer than every source."""
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


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` as static files on 127.0.0.1 and a free port; yields its base URL
    (``http://127.0.0.1:<port>/``): another port is another origin."""
    app = SharedDataMiddleware(NotFound(), {"/": str(folder)}, cache=False)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
