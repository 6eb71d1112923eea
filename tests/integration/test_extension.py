"""relayline as a Flask extension on a host application: mounted under a prefix, its
settings from app.config, the owner from the host's ``current_user``, and nothing of
the host's own behaviour changed. No worker: accepted turns stay queued."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from relayline import Relayline
from relayline.channels.mercure import thread_topic
from relayline.shared.settings import Settings
from relayline.web.services import Services
from tests.support.http_app import PUSH_ENV

pytestmark = pytest.mark.integration

#: who the host says is signed in, per test (None: nobody)
signed_in: list[str | None] = [None]


@pytest.fixture
def host(tmp_path: Path, redis_url: str) -> Iterator[Flask]:
    app = Flask("host")

    @app.get("/")
    def home() -> str:
        return "the host's home"

    @app.post("/upload")
    def upload() -> str:
        from flask import request

        return str(len(request.get_data()))

    app.config.update(
        {
            "RELAYLINE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
            "RELAYLINE_REDIS_URL": redis_url,
            "RELAYLINE_DELIVERY": "mercure",
            "RELAYLINE_PUBLIC_URL": "https://host.example",
            **{f"RELAYLINE_{name}": value for name, value in PUSH_ENV.items()},
        }
    )
    ext = Relayline()
    signed_in[0] = "ann"
    ext.init_app(app, url_prefix="/ai/", current_user=lambda: signed_in[0])
    yield app
    Relayline.services(app).close()


@pytest.fixture
def client(host: Flask) -> FlaskClient:
    return host.test_client()


def test_state_and_settings_come_from_the_host(host: Flask) -> None:
    svc = host.extensions["relayline"]
    assert isinstance(svc, Services) and svc.url_prefix == "/ai"
    assert svc.settings.delivery == "mercure"
    assert svc.settings.database_url == host.config["RELAYLINE_DATABASE_URL"]
    assert svc.settings.mercure.configured
    with pytest.raises(RuntimeError, match="already initialised"):
        Relayline(host)


def test_routes_live_under_the_prefix_only(client: FlaskClient) -> None:
    assert client.get("/ai/healthz").get_json() == {"status": "ok"}
    assert client.get("/healthz").status_code == 404
    assert client.get("/").text == "the host's home"
    for served in ("/ai/", "/ai/demo/static/demo.js"):  # the demo page and its script
        with client.get(served) as response:
            assert response.status_code == 200, served


def test_push_answers_point_under_the_prefix(client: FlaskClient) -> None:
    mercure = client.post("/ai/api/threads/t-1/messages", json={"content": "hi"})
    assert mercure.status_code == 202
    answer = mercure.get_json()
    assert answer["tokenEndpoint"] == "/ai/mercure/token?threadId=t-1"
    segment = f"/ai/api/threads/t-1/segments/{answer['streamId']}/envelopes"
    assert answer["envelopesUrl"] == segment
    # The topic is the one the worker publishes to: built from RELAYLINE_PUBLIC_URL alone.
    assert answer["topic"] == thread_topic("https://host.example", "t-1")
    token = client.get(answer["tokenEndpoint"])
    assert token.status_code == 200 and token.get_json()["topic"] == answer["topic"]
    pusher = client.post("/ai/api/threads/t-2/messages?delivery=pusher", json={"content": "x"})
    assert pusher.status_code == 202
    assert pusher.get_json()["authEndpoint"] == "/ai/pusher/auth"


def test_the_hosts_current_user_owns_threads(client: FlaskClient) -> None:
    # Subscribing claims a new thread for the caller (web.push).
    assert client.get("/ai/mercure/token?threadId=ann-1").status_code == 200
    assert client.get("/ai/api/threads/ann-1").status_code == 200
    signed_in[0] = "bob"
    assert client.get("/ai/api/threads/ann-1").status_code == 404
    assert client.get("/ai/mercure/token?threadId=ann-1").status_code == 404
    form = {"socket_id": "1.2", "channel_name": "private-thread-ann-1"}
    assert client.post("/ai/pusher/auth", data=form).status_code == 404
    signed_in[0] = None
    refused = client.get("/ai/api/threads/ann-1")
    assert refused.status_code == 401
    assert refused.get_json() == {"error": "Sign in first.", "type": "Unauthorized"}
    assert "WWW-Authenticate" not in refused.headers  # not a bearer-token challenge


def test_relaylines_errors_and_limits_stay_its_own(client: FlaskClient) -> None:
    # The host's 404 page and body limit are untouched; relayline's routes answer JSON.
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    big = b"x" * (2 * 1024 * 1024)
    assert client.post("/upload", data=big).text == str(len(big))
    refused = client.post("/ai/api/threads/t-3/messages", data=big, content_type="application/json")
    assert refused.status_code == 413 and refused.get_json()["type"] == "RequestEntityTooLarge"


def test_the_standalone_app_is_the_same_extension(tmp_path: Path, redis_url: str) -> None:
    from relayline.web import create_app

    settings = Settings.from_env(
        {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", "REDIS_URL": redis_url}
    )
    app = create_app(settings)
    try:
        svc = Relayline.services(app)
        assert svc.settings is settings and svc.url_prefix == ""
        assert app.test_client().get("/healthz").status_code == 200
        unknown = app.test_client().get("/nowhere")  # standalone: JSON everywhere
        assert unknown.get_json() == {"error": unknown.get_json()["error"], "type": "NotFound"}
    finally:
        svc.close()
