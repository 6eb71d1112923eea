"""``GET /openapi.json``: the OpenAPI 3.1 description, built from Flask's url_map and
the definitions of web.schemas (the models that validate requests). A relayline route
without an operation there is an error, so no route goes undescribed.

SSE answers are ``text/event-stream``; in OpenAPI 3.1 their ``schema`` describes one
event (``{data, id?, event?}``), whose ``data`` is JSON (``contentMediaType``) of the
protocol's event schema (``contentSchema``: a union discriminated by ``type``)."""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any, TypedDict

from ag_ui.core import Event as AGUIEvent
from flask import Blueprint, Flask, Response, current_app, jsonify
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from relayline.web.schemas import OPERATIONS, THREAD_ID_SCHEMA, Answer, Events, Operation

bp = Blueprint("openapi", __name__)

REF = "#/components/schemas/{model}"
#: the blueprint every relayline endpoint is under (web.extension._mount)
PARENT = "relayline."

#: the native vocabulary (shared.protocols.native, web.dispatch's ``queued`` and
#: web.waiting's ``status``)
NATIVE_EVENTS = (
    "text",
    "reasoning",
    "tool-argument",
    "tool-call",
    "tool-result",
    "step-started",
    "step-finished",
    "activity",
    "custom",
    "interrupt",
    "queued",
    "status",
    "finish",
    "cancelled",
    "done",
    "error",
)
#: the Vercel AI SDK UI message stream chunks relayline sends (shared.protocols.vercel)
VERCEL_CHUNKS = (
    "start",
    "start-step",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
    "tool-approval-request",
    "tool-approval-response",
    "finish-step",
    "finish",
    "abort",
    "error",
    "data-relayline-status",
)


class Document(TypedDict):
    openapi: str
    info: dict[str, str]
    paths: dict[str, dict[str, Any]]
    components: dict[str, Any]


class UndescribedRouteError(LookupError):
    """A relayline route with no operation in web.schemas.OPERATIONS."""


_PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def _vocabulary(name: str, kinds: tuple[str, ...], doc: str) -> dict[str, Any]:
    # Each frame is a JSON object whose "type" names its kind; its other fields vary.
    return {
        "title": name,
        "description": doc,
        "oneOf": [
            {
                "type": "object",
                "title": kind,
                "properties": {"type": {"const": kind}},
                "required": ["type"],
            }
            for kind in kinds
        ],
        "discriminator": {"propertyName": "type"},
    }


def _event_schemas() -> dict[str, Any]:
    agui = TypeAdapter(AGUIEvent).json_schema(ref_template=REF)
    defs = agui.pop("$defs", {})
    return {
        **defs,
        "AGUIEvent": {"title": "AGUIEvent", **agui},
        "NativeEvent": _vocabulary("NativeEvent", NATIVE_EVENTS, "a native SSE frame's data"),
        "VercelChunk": _vocabulary("VercelChunk", VERCEL_CHUNKS, "a UI message stream chunk"),
    }


def _models() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for op in OPERATIONS.values():
        if op.body is not None:
            found[op.body.__name__] = op.body
        for answer in op.answers.values():
            if answer.model is not None:
                found[answer.model.__name__] = answer.model
    return list(found.values())


def _content(answer: Answer) -> dict[str, Any]:
    if answer.model is not None:
        return {answer.media: {"schema": {"$ref": REF.format(model=answer.model.__name__)}}}
    if answer.events is not None:
        return {answer.media: {"schema": _stream(answer.events)}}
    return {answer.media: {"schema": {}}}


def _stream(events: Events) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"one SSE event; its `data` is a {events}",
        "properties": {
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": REF.format(model=events)},
            },
            "id": {"type": "string"},
            "event": {"type": "string"},
        },
        "required": ["data"],
    }


def _operation(endpoint: str, op: Operation, path_params: list[str]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, answer in sorted(op.answers.items()):
        entry: dict[str, Any] = {"description": answer.description}
        if status != 204:
            entry["content"] = _content(answer)
        if answer.headers:
            entry["headers"] = {h: {"schema": {"type": "string"}} for h in answer.headers}
        responses[str(status)] = entry
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": op.path.get(name, THREAD_ID_SCHEMA),
        }
        for name in path_params
    ]
    params += [
        {
            "name": p.name,
            "in": p.where,
            "required": False,
            "schema": p.schema,
            "description": p.description,
        }
        for p in op.params
    ]
    found: dict[str, Any] = {
        "operationId": endpoint,
        "summary": op.summary,
        "parameters": params,
        "responses": responses,
    }
    if op.body is not None:
        found["requestBody"] = {
            "required": op.body_required,
            "content": {op.media: {"schema": {"$ref": REF.format(model=op.body.__name__)}}},
        }
    return found


def build(app: Flask) -> Document:
    """The document for ``app``'s relayline routes (under its prefix)."""
    paths: dict[str, dict[str, Any]] = {}
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith(PARENT):
            continue  # the host's own routes
        endpoint = rule.endpoint[len(PARENT) :]
        op = OPERATIONS.get(endpoint)
        if op is None:
            raise UndescribedRouteError(
                f"{rule.rule} ({endpoint}) has no operation in web.schemas."
            )
        path = _PARAM.sub(r"{\1}", rule.rule)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(
                endpoint, op, _PARAM.findall(rule.rule)
            )
    _, schemas = models_json_schema([(m, "validation") for m in _models()], ref_template=REF)
    return {
        "openapi": "3.1.0",
        "info": {"title": "relayline", "version": version("relayline")},
        "paths": paths,
        "components": {"schemas": {**schemas.get("$defs", {}), **_event_schemas()}},
    }


@bp.get("/openapi.json")
def document() -> Response:
    # Built once per application: its routes do not change after the first request.
    cached = current_app.extensions.get("relayline.openapi")
    if cached is None:
        cached = current_app.extensions["relayline.openapi"] = build(current_app)
    return jsonify(cached)
