"""``GET /docs``: the interactive OpenAPI viewer (Swagger UI from the flask-swagger-ui
package), in headless Chromium: every file the page asks for comes from relayline
(nothing from another host: the browser resolves no other name), and it renders the
operations of relayline's own ``/openapi.json``; under an embedding application's
prefix the page and its files follow the prefix."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask

from relayline import Relayline
from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.integration import test_demo_page
from tests.integration.test_demo_page import BROWSER_DIR, PNG_SIGNATURE
from tests.support.host_app import HostServer
from tests.support.redis_server import RedisDatabases

pytestmark = pytest.mark.integration

#: Node with playwright-core and Debian's Chromium, as the demo page's test has them
node = test_demo_page.node


def _settings(tmp_path: Path, redis_url: str) -> Settings:
    return Settings.from_env(
        {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", "REDIS_URL": redis_url}
    )


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[tuple[HostServer, HostServer]]:
    """relayline on its own, and embedded under ``/ai`` in a host application."""
    workdir = tmp_path_factory.mktemp("api-docs")
    with redis_databases.database("api docs") as redis_url:
        standalone = HostServer(create_app(_settings(workdir, redis_url)))
        host = Flask("host")
        Relayline(host, url_prefix="/ai", settings=_settings(workdir, redis_url))
        embedded = HostServer(host)
        try:
            yield standalone, embedded
        finally:
            standalone.stop()
            embedded.stop()


def test_the_viewer_renders_relaylines_document_from_its_own_files(
    servers: tuple[HostServer, HostServer], node: str, tmp_path: Path
) -> None:
    server, _ = servers
    screenshot = tmp_path / "docs.png"
    done = subprocess.run(
        [node, str(BROWSER_DIR / "api_docs.mjs"), server.url, str(screenshot)],
        cwd=BROWSER_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["failed"] == []
    assert result["url"] == f"{server.url}/docs/"
    # every request of the page went to relayline: the page, Swagger UI's files, the document
    assert all(url.startswith(server.url + "/") for url in result["requests"]), result
    assert f"{server.url}/openapi.json" in result["requests"]
    assert f"{server.url}/docs/swagger-ui-bundle.js" in result["requests"]
    document = requests.get(f"{server.url}/openapi.json", timeout=10).json()
    assert set(result["paths"]) == set(document["paths"])  # every route, as described
    assert "/api/threads/{thread_id}/messages" in result["paths"]
    assert result["title"].startswith("relayline")
    assert screenshot.read_bytes()[:8] == PNG_SIGNATURE


def test_under_a_prefix_the_page_and_its_files_follow_it(
    servers: tuple[HostServer, HostServer],
) -> None:
    _, host = servers
    page = requests.get(f"{host.url}/ai/docs", timeout=10)  # redirected to /ai/docs/
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert '"url": "/ai/openapi.json"' in page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/ai/docs/") for a in assets), assets
    for asset in assets:
        assert requests.get(host.url + asset, timeout=10).status_code == 200, asset
    assert requests.get(f"{host.url}/docs/", timeout=10).status_code == 404  # the host's root
    document = requests.get(f"{host.url}/ai/openapi.json", timeout=10).json()
    assert "/ai/docs/{path}" in document["paths"]
