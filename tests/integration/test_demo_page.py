"""The demo page at ``/`` in a real browser: headless Debian Chromium driven by
playwright-core (tests/browser/demo.test.mjs) against the whole stack (web app, a real
Celery worker, Redis, SQLite) running the demo agent of ``relayline/demo.py``: relayed on
a server without push delivery, and relayed, through Mercure and through Pusher on one
that has a real Mercure hub and a real soketi."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask

from relayline import Relayline
from relayline.demo import build as build_demo_agent
from relayline.shared.auth import mint_token
from relayline.shared.ids import THREAD_ID_PATTERN
from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.shared.texts import OUTCOME_TEXTS
from tests.support.host_app import HostServer
from tests.support.mercure_hub import MercureHub
from tests.support.push_stack import PushStack, push_stack
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import Soketi
from tests.support.stack import Worker, running_stack, stack_env

pytestmark = pytest.mark.integration

BROWSER_DIR = Path(__file__).resolve().parents[1] / "browser"
#: screenshots of the demo page people can look at after a run (gitignored)
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "demo-page"
CHROMIUM = Path("/usr/bin/chromium")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VENDORED_PUSHER = "/demo/static/vendor/pusher-with-encryption.min.js"


@pytest.fixture(scope="module")
def demo_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[str]:
    """The stack serving the demo agent; yields the base URL of the web app."""
    workdir = tmp_path_factory.mktemp("demo")
    database_url = f"sqlite:///{workdir / 'db.sqlite'}"
    Store(database_url).dispose()  # migrate before the worker touches the database
    with redis_databases.database("demo page stack") as redis_url:
        env = {
            **stack_env(redis_url, database_url, workdir),
            "RELAYLINE_AGENT": "relayline.demo:build",
        }
        with running_stack(env, workers=1) as (web, _workers):
            yield web.url


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
        # Relative to the page, so the page works wherever relayline is mounted.
        assert f'"demo/static/{asset}"' in page.text
    script = requests.get(demo_stack + "/demo/static/demo.js", timeout=10).text
    assert "innerHTML" not in script  # model output is only ever set as text
    consumer = requests.get(demo_stack + "/demo/static/relayline-consumer.js", timeout=10)
    assert consumer.status_code == 200
    assert consumer.headers["Content-Type"].startswith("text/javascript")
    # pusher-js is served from this origin (no CDN), with its MIT licence kept.
    vendored = requests.get(demo_stack + VENDORED_PUSHER, timeout=10)
    assert vendored.status_code == 200
    assert vendored.headers["Content-Type"].startswith("text/javascript")
    assert vendored.text.startswith("/*!\n * pusher-js 8.6.0")
    assert "Permission is hereby granted, free of charge" in vendored.text[:3000]


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
    assert len(steps) == 12, done.stdout
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
    # The stopped story was deleted from the page's list: it is gone from the server.
    story = requests.get(f"{demo_stack}/api/chat/{result['storyThreadId']}", timeout=10)
    assert story.status_code == 404
    assert result["partial"].startswith("Once upon a time")
    listed = requests.get(f"{demo_stack}/api/threads", timeout=10).json()["threads"]
    assert {result["threadId"], result["freshThreadId"]} <= {t["threadId"] for t in listed}
    assert result["storyThreadId"] not in {t["threadId"] for t in listed}
    assert_resumed_as_stored(demo_stack, result)


def answers(base_url: str, thread_id: str) -> list[str]:
    """The stored answers of a thread: the text of each assistant message."""
    history = requests.get(f"{base_url}/api/chat/{thread_id}", timeout=10).json()["messages"]
    return [
        "".join(part["text"] for part in message["parts"] if part["type"] == "text")
        for message in history
        if message["role"] == "assistant"
    ]


def assert_resumed_as_stored(base_url: str, result: dict[str, Any]) -> None:
    """What the pages drew while resuming is exactly what the server stored: the story
    resumed after a reload, the two answers both tabs showed, the answer whose stream
    was cut and resumed from its last sequence."""
    stories = answers(base_url, result["resumeThreadId"])
    assert len(stories) == 2
    assert stories[0] == result["resumed"]
    assert stories[0].startswith("Once upon a time") and stories[0].endswith("until morning.")
    assert result["tabs"] == [stories, stories]
    assert answers(base_url, result["dropThreadId"]) == [result["dropped"]] == [stories[0]]


@pytest.fixture(scope="module")
def prefixed_demo(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[str]:
    """The demo agent behind a host application that mounts relayline at ``/ai``;
    yields the host's base URL."""
    workdir = tmp_path_factory.mktemp("demo-prefixed")
    database_url = f"sqlite:///{workdir / 'db.sqlite'}"
    Store(database_url).dispose()
    with redis_databases.database("prefixed demo page stack") as redis_url:
        env = {
            **stack_env(redis_url, database_url, workdir),
            "RELAYLINE_AGENT": "relayline.demo:build",
        }
        worker = Worker(env, "prefixed")
        try:
            host = Flask("host")
            Relayline(host, url_prefix="/ai", settings=Settings.from_env(env))
            server = HostServer(host)
            try:
                yield server.url
            finally:
                server.stop()
        finally:
            worker.stop()


def test_demo_page_under_a_prefix_in_chromium(
    prefixed_demo: str, node: str, tmp_path: Path
) -> None:
    """The same browser run with the page at ``/ai/``: every request the page makes
    (assets, config, turns, reloads) must find relayline under the prefix."""
    screenshot = tmp_path / "demo.png"
    done = subprocess.run(
        [node, str(BROWSER_DIR / "demo.test.mjs"), f"{prefixed_demo}/ai/", str(screenshot)],
        cwd=BROWSER_DIR,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert len([line for line in done.stdout.splitlines() if line.startswith("ok - ")]) == 12
    result: dict[str, Any] = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    thread = requests.get(f"{prefixed_demo}/ai/api/threads/{result['threadId']}", timeout=10)
    assert thread.json()["run"]["status"] == "completed"
    assert requests.get(f"{prefixed_demo}/api/threads/{result['threadId']}").status_code == 404
    assert_resumed_as_stored(f"{prefixed_demo}/ai", result)


# ---------------------------------------------------------------------------------------
# The person-facing features, on a server that wants a bearer token
# ---------------------------------------------------------------------------------------

#: SECRET_KEY of the token stack (RELAYLINE_AUTH=token wants at least 32 characters)
SECRET = "demo-page-test-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def token_demo_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[str]:
    """The demo agent on a stack with RELAYLINE_AUTH=token; yields the web app's URL."""
    workdir = tmp_path_factory.mktemp("demo-token")
    database_url = f"sqlite:///{workdir / 'db.sqlite'}"
    Store(database_url).dispose()
    with redis_databases.database("token demo page stack") as redis_url:
        env = {
            **stack_env(redis_url, database_url, workdir),
            "RELAYLINE_AGENT": "relayline.demo:build",
            "RELAYLINE_AUTH": "token",
            "SECRET_KEY": SECRET,
        }
        with running_stack(env, workers=1) as (web, _workers):
            yield web.url


def test_the_page_learns_that_it_needs_a_token(token_demo_stack: str) -> None:
    config = requests.get(token_demo_stack + "/demo/config", timeout=10)
    assert config.status_code == 200  # the page asks before it has a token
    assert config.json()["tokenRequired"] is True
    assert config.json()["outcomeTexts"] == OUTCOME_TEXTS
    # The suggestions the chips show, from the agent (AgentSpec.suggestions).
    agent = requests.get(token_demo_stack + "/agent/default", timeout=10).json()
    assert [s["suggestion"] for s in agent["suggestions"]] == build_demo_agent().suggestions


#: a page that lacks a feature spends the script's 20 s wait on it, and goes on with the
#: next: six missing features still end in a report of each (a working page: ~15 s)
FEATURES_TIMEOUT = 6 * 40


def features_in_chromium(
    node: str, base_url: str, shots: tuple[str, ...], *token: str
) -> tuple[list[str], Any]:
    """Run tests/browser/demo-features.test.mjs; its steps and its RESULT, once each
    of ``shots`` (screenshots in ARTIFACTS, by name) was taken afresh."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name in shots:
        (ARTIFACTS / f"{name}.png").unlink(missing_ok=True)
    done = subprocess.run(
        [
            node,
            str(BROWSER_DIR / "demo-features.test.mjs"),
            base_url,
            str(ARTIFACTS),
            json.dumps(OUTCOME_TEXTS),
            *token,
        ],
        cwd=BROWSER_DIR,
        capture_output=True,
        text=True,
        timeout=FEATURES_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    steps = [line[len("ok - ") :] for line in done.stdout.splitlines() if line.startswith("ok - ")]
    for name in shots:
        assert (ARTIFACTS / f"{name}.png").read_bytes()[:8] == PNG_SIGNATURE, name
    return steps, json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])


@pytest.mark.timeout(FEATURES_TIMEOUT + 60)
def test_demo_page_features_in_chromium(demo_stack: str, node: str) -> None:
    """Suggestion chips, one-line decided approvals in the person's words, "stopped"
    the same live and after a reload, delete behind a confirmation; the screenshots stay
    in artifacts/demo-page/ for people to look at."""
    shots = ("suggestion-chips", "stopped-approval-after-reload", "delete-dialog")
    steps, result = features_in_chromium(node, demo_stack, shots)
    assert steps == [
        "suggestion chips",
        "long story chip and Stop",
        "an approved call collapses to one line",
        "a rejected call collapses to one line in the person's words",
        "a stopped approval looks the same live and after a reload",
        "delete asks for confirmation",
    ]
    assert result["chips"] == build_demo_agent().suggestions

    # What the server stored of what the page drew: approved, rejected with the reason
    # typed, and the stopped approval neither approved nor rejected.
    def tool_parts(thread_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        history = requests.get(f"{demo_stack}/api/chat/{thread_id}", timeout=10).json()
        turn = history["messages"][-1]
        return [p for p in turn["parts"] if p["type"].startswith("tool-")], turn

    [approved], _ = tool_parts(result["approvedThreadId"])
    assert approved["state"] == "output-available"
    assert approved["approval"] == {"id": approved["toolCallId"], "approved": True}
    [rejected], _ = tool_parts(result["rejectedThreadId"])
    assert rejected["state"] == "output-denied"
    assert rejected["approval"]["reason"] == result["reason"]
    [stopped], turn = tool_parts(result["stoppedThreadId"])
    assert stopped["state"] == "output-error" and "approval" not in stopped
    assert turn["metadata"] == {
        "stopped": True,
        "unfinishedCalls": {stopped["toolCallId"]: "stopped"},
    }
    run = requests.get(f"{demo_stack}/api/threads/{result['stoppedThreadId']}", timeout=10)
    assert run.json()["run"]["status"] == "cancelled"
    # Confirmed, the conversation is gone from the server.
    deleted = requests.get(f"{demo_stack}/api/chat/{result['deletedThreadId']}", timeout=10)
    assert deleted.status_code == 404


def test_demo_page_token_field_in_chromium(token_demo_stack: str, node: str) -> None:
    token = mint_token(SECRET, "ann")
    steps, result = features_in_chromium(node, token_demo_stack, ("token-field",), token)
    assert steps == ["token field"]
    # The conversation belongs to the token's user: without the token it is not found.
    thread = f"{token_demo_stack}/api/threads/{result['threadId']}"
    assert requests.get(thread, timeout=10).status_code == 401
    owned = requests.get(thread, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert owned.json()["run"]["status"] == "completed"


# ---------------------------------------------------------------------------------------
# Push delivery
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def push_demo_stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    soketi: Soketi,
    hub: MercureHub,
) -> Iterator[PushStack]:
    """The demo agent on a stack that also offers Pusher and Mercure delivery."""
    with push_stack(
        tmp_path_factory.mktemp("demo-push"),
        redis_databases,
        soketi=soketi,
        hub=hub,
        RELAYLINE_AGENT="relayline.demo:build",
    ) as running:
        yield running


def test_the_page_learns_which_push_deliveries_it_may_use(push_demo_stack: PushStack) -> None:
    """GET /demo/config names what a browser needs to subscribe, and the page's policy
    lets it connect there and nowhere else."""
    soketi, hub = push_demo_stack.soketi, push_demo_stack.hub
    assert soketi is not None and hub is not None
    config = push_demo_stack.get("/demo/config")
    assert config.status_code == 200, (
        "the demo page discovers push delivery at GET /demo/config (see web/demo.py)"
    )
    assert config.json() == {
        "delivery": "relay",
        "threadIdPattern": THREAD_ID_PATTERN,  # the page checks a saved thread id by it
        "tokenRequired": False,
        "outcomeTexts": OUTCOME_TEXTS,
        "pusher": {
            "key": soketi.key,
            "wsHost": soketi.host,
            "wsPort": soketi.port,
            "wssPort": soketi.port,
            "forceTLS": False,
            "encrypted": False,
        },
        "mercure": {"hubUrl": hub.url},
    }
    policy = push_demo_stack.get("/").headers["Content-Security-Policy"]
    connect = next(d for d in policy.split("; ") if d.startswith("connect-src "))
    hub_origin = hub.url.removesuffix("/.well-known/mercure")
    assert connect.split() == [
        "connect-src",
        "'self'",
        f"ws://{soketi.host}:{soketi.port}",
        hub_origin,
    ]


def test_demo_page_over_relay_mercure_and_pusher_in_chromium(
    push_demo_stack: PushStack, node: str, tmp_path: Path
) -> None:
    deliveries = ["relay", "mercure", "pusher"]
    screenshot = tmp_path / "demo.png"
    script = str(BROWSER_DIR / "demo.test.mjs")
    done = subprocess.run(
        [node, script, push_demo_stack.web.url, str(screenshot), *deliveries],
        cwd=BROWSER_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    steps = [line[len("ok - ") :] for line in done.stdout.splitlines() if line.startswith("ok - ")]
    assert steps == ["delivery selector"] + [
        f"{delivery}: {what}"
        for delivery in deliveries
        for what in ("frontend tool", "approval", "screenshot")
    ]
    result: dict[str, Any] = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    conversations = result["conversations"]
    assert len({c["threadId"] for c in conversations.values()}) == len(deliveries)

    for delivery in deliveries:
        shot = tmp_path / f"demo-{delivery}.png"
        assert shot.read_bytes()[:8] == PNG_SIGNATURE, delivery
        seen = conversations[delivery]
        thread = seen["threadId"]
        # Every request of the conversation asked for this delivery and got it: 202 and
        # the output pushed, or 200 and the output in the response.
        status = 200 if delivery == "relay" else 202
        assert seen["posts"] == [
            {"path": f"/api/threads/{thread}/{action}", "delivery": delivery, "status": status}
            for action in ("messages", "tool-results", "messages", "approvals")
        ]
        if delivery == "mercure":
            assert seen["hubRequests"] >= len(seen["posts"])  # a subscription per segment
        else:
            assert seen["hubRequests"] == 0
        if delivery == "pusher":
            assert seen["socketEvents"] > 0
        else:
            assert seen["socketEvents"] == 0

        # What the server recorded: the page answered the frontend tool with its title,
        # and the deletion was approved.
        history = push_demo_stack.get(f"/api/chat/{thread}").json()["messages"]
        tools = [
            part
            for message in history
            for part in message["parts"]
            if part["type"].startswith("tool-")
        ]
        assert [(p["type"], p["state"]) for p in tools] == [
            ("tool-read_title", "output-available"),
            ("tool-delete_file", "output-available"),
        ], delivery
        assert tools[0]["output"] == result["title"] == "relayline demo"
        assert tools[1]["output"] == "report.pdf deleted"
        run = push_demo_stack.get(f"/api/threads/{thread}").json()["run"]
        assert run["status"] == "completed"
