"""examples/flask_app end to end: the host's Flask-Login users own relayline's threads,
and the host's own Celery worker (relayline's tasks registered on it, consuming only
RELAYLINE_QUEUE) runs the turns. Sign in, chat through the prefixed endpoints, and
another user's thread is 404 everywhere, push authorization included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from tests.support.host_app import HostServer, HostWorker
from tests.support.http_app import PUSH_ENV
from tests.support.redis_server import RedisDatabases
from tests.support.stack import ROOT

pytestmark = pytest.mark.integration

QUEUE = "relayline-turns"


@pytest.fixture(scope="module")
def host(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[tuple[HostServer, Path]]:
    workdir = tmp_path_factory.mktemp("example")
    database_url = f"sqlite:///{workdir / 'db.sqlite'}"
    Store(database_url).dispose()  # migrated before the worker touches it
    with redis_databases.database("example host app") as redis_url:
        # The worker reads relayline's settings from its environment, the web from
        # app.config (over the same environment): both must agree on these.
        env = {
            "PYTHONPATH": str(ROOT),
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "DATABASE_URL": database_url,
            "RELAYLINE_QUEUE": QUEUE,
            **PUSH_ENV,
        }
        log = workdir / "worker.log"
        worker = HostWorker("examples.flask_app.tasks", QUEUE, env, log)
        try:
            from examples.flask_app.app import create_app

            config: dict[str, Any] = {
                "SECRET_KEY": "the-host-session-secret",
                **{config_key(name): value for name, value in env.items()},
            }
            server = HostServer(create_app(config))
            try:
                yield server, log
            finally:
                server.stop()
        finally:
            worker.stop()


def config_key(name: str) -> str:
    """The app.config key of a setting: RELAYLINE_* as is, the platform's prefixed."""
    return name if name.startswith("RELAYLINE_") else f"RELAYLINE_{name}"


def signed_in(url: str, user: str) -> requests.Session:
    session = requests.Session()
    response = session.post(f"{url}/login", data={"username": user, "password": f"{user}-password"})
    assert response.status_code == 200 and "Hello" in response.text
    return session


def chat(session: requests.Session, url: str, thread: str, text: str) -> list[dict[str, Any]]:
    response = session.post(
        f"{url}/ai/api/threads/{thread}/messages", json={"content": text}, stream=True, timeout=60
    )
    assert response.status_code == 200, response.text
    return [
        json.loads(line[len("data: ") :])
        for line in response.iter_lines(decode_unicode=True)
        if line and line.startswith("data: ")
    ]


def test_settings_come_from_app_config(host: tuple[HostServer, Path]) -> None:
    server, _ = host
    settings: Settings = server.app.extensions["relayline"].settings
    assert settings.queue == QUEUE
    assert settings.pusher.configured and settings.mercure.configured
    assert settings.secret_key != "the-host-session-secret"  # the host's own stays its own


def test_sign_in_and_chat_through_the_hosts_worker(host: tuple[HostServer, Path]) -> None:
    server, log = host
    anonymous = requests.post(
        f"{server.url}/ai/api/threads/ann-1/messages", json={"content": "Hi"}, timeout=10
    )
    assert anonymous.status_code == 401
    assert anonymous.json() == {"error": "Sign in first.", "type": "Unauthorized"}

    ann = signed_in(server.url, "ann")
    events = chat(ann, server.url, "ann-1", "Hello there")
    text = "".join(e["content"] for e in events if e["type"] == "text")
    assert text.startswith("Hello! You said: Hello there.")
    assert ann.get(f"{server.url}/ai/api/threads/ann-1", timeout=10).json()["run"]["status"] == (
        "completed"
    )
    history = ann.get(f"{server.url}/ai/api/chat/ann-1", timeout=10).json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    # The turn ran on the host's worker, which consumes only RELAYLINE_QUEUE.
    assert "relayline.run_turn" in log.read_text()
    store = Store(server.app.extensions["relayline"].settings.database_url)
    try:
        thread = store.thread("ann-1")
        assert thread is not None and thread.owner == "ann"
    finally:
        store.dispose()


def test_another_users_thread_is_404(host: tuple[HostServer, Path]) -> None:
    server, _ = host
    ann = signed_in(server.url, "ann")
    chat(ann, server.url, "ann-2", "Hello")
    bob = signed_in(server.url, "bob")
    for path in ("/ai/api/threads/ann-2", "/ai/api/chat/ann-2", "/ai/agui/threads/ann-2"):
        refused = bob.get(server.url + path, timeout=10)
        assert refused.status_code == 404, path
        assert refused.json() == {"error": "Thread 'ann-2' was not found.", "type": "NotFound"}
    post = bob.post(f"{server.url}/ai/api/threads/ann-2/messages", json={"content": "x"})
    assert post.status_code == 404
    # Push authorization follows the signed-in user too.
    token = bob.get(f"{server.url}/ai/mercure/token", params={"threadId": "ann-2"}, timeout=10)
    assert token.status_code == 404
    assert ann.get(f"{server.url}/ai/mercure/token", params={"threadId": "ann-2"}).ok
    form = {"socket_id": "1.2", "channel_name": "private-thread-ann-2"}
    assert bob.post(f"{server.url}/ai/pusher/auth", data=form, timeout=10).status_code == 404
    assert ann.post(f"{server.url}/ai/pusher/auth", data=form, timeout=10).status_code == 200


def test_the_demo_page_works_under_the_prefix(host: tuple[HostServer, Path]) -> None:
    server, _ = host
    ann = signed_in(server.url, "ann")
    page = ann.get(f"{server.url}/ai/", timeout=10)
    assert page.status_code == 200 and "<title>relayline demo</title>" in page.text
    # The page's assets are relative to it, and its script finds its routes from its
    # own URL: everything resolves under /ai and nothing at the root.
    for asset in ("demo/static/demo.js", "demo/static/demo.css", "demo/config"):
        assert f'"{asset}"' in page.text or asset == "demo/config"
        assert ann.get(f"{server.url}/ai/{asset}", timeout=10).status_code == 200, asset
        assert ann.get(f"{server.url}/{asset}", timeout=10).status_code == 404, asset
    script = ann.get(f"{server.url}/ai/demo/static/demo.js", timeout=10).text
    assert "new URL('../../', import.meta.url)" in script
    assert "fetch(path" not in script  # every request goes through route()


def test_the_hosts_own_routes_keep_their_error_pages(host: tuple[HostServer, Path]) -> None:
    server, _ = host
    missing = requests.get(f"{server.url}/no-such-page", timeout=10)
    assert missing.status_code == 404
    assert missing.headers["Content-Type"].startswith("text/html")  # Flask's, not relayline's
    wrong = requests.post(f"{server.url}/login", data={"username": "ann", "password": "x"})
    assert wrong.status_code == 401 and wrong.text == "Wrong user name or password."
