"""The demo page at ``/`` in a real browser: headless Debian Chromium driven by
playwright-core (tests/browser/demo.test.mjs) against the whole stack (web app, a real
Celery worker, Redis, SQLite) running the demo agent of ``shared/demo.py``."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from shared.persistence import Store
from tests.support.stack import running_stack, stack_env

pytestmark = pytest.mark.integration

BROWSER_DIR = Path(__file__).resolve().parents[1] / "browser"
CHROMIUM = Path("/usr/bin/chromium")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo_stack(tmp_path_factory: pytest.TempPathFactory, redis_base_url: str) -> Iterator[str]:
    """The stack serving the demo agent; yields the base URL of the web app."""
    import redis

    workdir = tmp_path_factory.mktemp("demo")
    database_url = f"sqlite:///{workdir / 'db.sqlite'}"
    redis_url = f"{redis_base_url}/13"
    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()
    Store(database_url).dispose()  # migrate before the worker touches the database
    env = {**stack_env(redis_url, database_url, workdir), "RELAYLINE_AGENT": "shared.demo:build"}
    with running_stack(env, workers=1) as (web, _workers):
        yield web.url
    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()


@pytest.fixture(scope="module")
def node() -> str:
    """Node with playwright-core installed (``npm ci`` on first use) and Chromium present."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the demo page test drives Debian's Chromium. Install it "
            "with `apt-get install -y --no-install-recommends chromium` (never "
            "`npx playwright install`: it downloads a browser build and fails here)."
        )
    node_bin, npm_bin = shutil.which("node"), shutil.which("npm")
    if node_bin is None or npm_bin is None:
        pytest.fail("node and npm (Node 20) are needed to run tests/browser/demo.test.mjs.")
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        installed = subprocess.run(
            [npm_bin, "ci", "--no-audit", "--no-fund"],
            cwd=BROWSER_DIR,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert installed.returncode == 0, f"npm ci failed in {BROWSER_DIR}:\n{installed.stderr}"
    return node_bin


def test_page_and_assets_are_served_with_a_strict_policy(demo_stack: str) -> None:
    page = requests.get(demo_stack + "/", timeout=10)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "<title>relayline demo</title>" in page.text
    for asset, kind in (("demo.js", "text/javascript"), ("demo.css", "text/css")):
        served = requests.get(f"{demo_stack}/demo/static/{asset}", timeout=10)
        assert served.status_code == 200, asset
        assert served.headers["Content-Type"].startswith(kind), asset
        assert f"/demo/static/{asset}" in page.text
    script = requests.get(demo_stack + "/demo/static/demo.js", timeout=10).text
    assert "innerHTML" not in script  # model output is only ever set as text


def test_demo_page_in_chromium(demo_stack: str, node: str, tmp_path: Path) -> None:
    screenshot = tmp_path / "demo.png"
    done = subprocess.run(
        [node, str(BROWSER_DIR / "demo.test.mjs"), demo_stack, str(screenshot)],
        cwd=BROWSER_DIR,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    steps = [line for line in done.stdout.splitlines() if line.startswith("ok - ")]
    assert len(steps) == 7, done.stdout
    assert screenshot.is_file()
    assert screenshot.read_bytes()[:8] == PNG_SIGNATURE

    # What the page did, as the server recorded it: the frontend tool's result is the
    # page's title, the first deletion was approved and the second rejected with the
    # reason typed into the card.
    result: dict[str, Any] = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    history = requests.get(f"{demo_stack}/api/chat/{result['threadId']}", timeout=10).json()
    tools = [
        part
        for message in history["messages"]
        for part in message["parts"]
        if part["type"].startswith("tool-")
    ]
    assert [(p["type"], p["state"]) for p in tools] == [
        ("tool-get_weather", "output-available"),
        ("tool-read_title", "output-available"),
        ("tool-delete_file", "output-available"),
        ("tool-delete_file", "output-denied"),
    ]
    assert tools[1]["output"] == result["title"] == "relayline demo"
    assert tools[2]["output"] == "report.pdf deleted"
    assert tools[3]["approval"]["reason"] == result["reason"]
    thread = requests.get(f"{demo_stack}/api/threads/{result['threadId']}", timeout=10).json()
    assert thread["run"]["status"] == "completed"
    fresh = requests.get(f"{demo_stack}/api/chat/{result['freshThreadId']}", timeout=10).json()
    assert [m["role"] for m in fresh["messages"]] == ["user", "assistant"]
