"""The OpenAPI description (web.openapi) is built from Flask's url_map and the
definitions of web.schemas: every relayline route is described, a route without a
description fails the build, and the request models are the ones the routes validate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

import relayline
from relayline.shared.errors import InputTranslationError
from relayline.shared.settings import Settings
from relayline.web import Relayline, create_app
from relayline.web.openapi import UndescribedRouteError, build
from relayline.web.schemas import ChatStopBody, NativeMessageBody, parse_body


def _settings(tmp_path: Path) -> Settings:
    # No connection is made by building the app or the document.
    return Settings.from_env(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
            "REDIS_URL": "redis://127.0.0.1:1/0",
        }
    )


def _operations(document: Any) -> set[tuple[str, str]]:
    return {(path, method) for path, item in document["paths"].items() for method in item}


def test_every_relayline_route_is_described(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path))
    document = build(app)
    assert document["openapi"] == "3.1.0"
    expected = {
        (rule.rule.replace("<", "{").replace(">", "}").replace("{path:", "{"), method.lower())
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("relayline.")
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}
    }
    assert _operations(document) == expected
    assert ("/api/threads/{thread_id}/messages", "post") in expected
    assert ("/openapi.json", "get") in expected


def test_a_route_without_a_description_fails_the_build(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path))
    app.add_url_rule("/undescribed", endpoint="relayline.extra.undescribed", view_func=lambda: "")
    with pytest.raises(UndescribedRouteError, match="/undescribed"):
        build(app)


def test_paths_carry_the_mount_prefix_and_host_routes_are_left_out(tmp_path: Path) -> None:
    host = Flask("host")
    host.add_url_rule("/mine", view_func=lambda: "the host's own")
    Relayline(host, url_prefix="/ai", settings=_settings(tmp_path))
    document = build(host)
    paths = set(document["paths"])
    assert "/ai/openapi.json" in paths and "/ai/api/chat" in paths
    assert "/mine" not in paths and all(p.startswith("/ai/") for p in paths)
    with host.test_client() as client:
        served = client.get("/ai/openapi.json")
    assert served.status_code == 200 and served.get_json()["paths"].keys() == paths


def test_bodies_sse_and_errors_are_referenced(tmp_path: Path) -> None:
    document = build(create_app(_settings(tmp_path)))
    schemas = document["components"]["schemas"]
    post = document["paths"]["/api/threads/{thread_id}/messages"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/NativeMessageBody"}
    assert schemas["NativeMessageBody"]["required"] == ["content"]
    stream = post["responses"]["200"]["content"]["text/event-stream"]["schema"]
    data = stream["properties"]["data"]
    assert data["contentSchema"] == {"$ref": "#/components/schemas/NativeEvent"}
    kinds = {one["properties"]["type"]["const"] for one in schemas["NativeEvent"]["oneOf"]}
    assert {"text", "tool-call", "interrupt", "cancelled", "error"} <= kinds
    assert "RunStartedEvent" in schemas and "AGUIEvent" in schemas and "VercelChunk" in schemas
    refused = post["responses"]["400"]["content"]["application/json"]["schema"]
    assert refused == {"$ref": "#/components/schemas/ErrorBody"}
    assert schemas["ErrorBody"]["required"] == ["error", "type"]


def test_the_routes_models_refuse_with_their_messages() -> None:
    app = Flask("t")
    content = pytest.raises(InputTranslationError, match="non-empty string 'content'")
    with app.test_request_context(json={"content": 5}), content:
        parse_body(NativeMessageBody)
    segment_id = pytest.raises(InputTranslationError, match="'activeStreamId' must be a string")
    with app.test_request_context(json={"activeStreamId": "x" * 129}), segment_id:
        parse_body(ChatStopBody)
    with app.test_request_context(json={"content": "hi", "extra": 1}):
        assert parse_body(NativeMessageBody).content == "hi"


def test_the_document_names_relayline_s_version(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path))
    document = app.test_client().get("/openapi.json").get_json()
    assert document["info"]["version"] == relayline.__version__


def test_every_refusal_503_names_retry_after(tmp_path: Path) -> None:
    """A dependency down (the database: code database_unavailable) is a 503 with
    Retry-After on every route that may answer it (web.errors)."""
    document = build(create_app(_settings(tmp_path)))
    refusals = [
        answer
        for item in document["paths"].values()
        for operation in item.values()
        for status, answer in operation["responses"].items()
        if status == "503" and "ErrorBody" in str(answer.get("content"))
    ]
    assert len(refusals) > 10
    assert all("Retry-After" in answer.get("headers", {}) for answer in refusals)
    assert all("database_unavailable" in answer["description"] for answer in refusals)
