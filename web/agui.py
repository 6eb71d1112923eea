"""AG-UI: ``POST /agui`` (the default agent), ``POST|GET /agent/<agentId>``, and reload
through ``GET /agui/threads/<id>``."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import BadRequest, NotFound

from shared.adapters import AGUIAdapter
from shared.adapters.agui_hydrate import agui_thread_payload, hydrate
from shared.agent import Agent, AgentSpec
from shared.messages import Message
from shared.registry import DEFAULT_AGENT
from shared.translators import AGUIInputTranslator
from web.auth import current_user, thread_for
from web.dispatch import continue_job, deliver, json_body, refuse_if_busy, turn_job
from web.services import services

bp = Blueprint("agui", __name__)
HEADERS = AGUIAdapter("headers").headers()


def _spec(agent_id: str) -> AgentSpec:
    if agent_id not in services().registry:
        raise NotFound(f"Agent '{agent_id}' was not found.")
    return services().registry.spec(agent_id)


def _redact(spec: AgentSpec) -> dict[str, tuple[str, ...]]:
    return {t.name: t.redact for t in spec.tools if t.redact}


def _seed_messages(agent: Agent, spec: AgentSpec, client: list[Any]) -> list[Any]:
    """What the client holds, completed from storage: a client that sends only its latest
    message (stateful backend) and one that sends everything see the same snapshot, and
    no message appears twice (matched by id)."""
    stored = hydrate(agent.history(), agent.inspect(), redact=_redact(spec))["messages"]
    known = {m.get("id") for m in stored}
    # A result the client sent under its own message id is stored as result_<callId>:
    # keep only the stored copy, or snapshots would show the result twice.
    answered = {m.get("toolCallId") for m in stored if m.get("role") == "tool"}
    extra = [
        m
        for m in client
        if isinstance(m, dict)
        and m.get("id") not in known
        and not (m.get("role") == "tool" and m.get("toolCallId") in answered)
    ]
    return [*stored, *extra]


def _run(agent_id: str) -> Response:
    spec = _spec(agent_id)
    payload = json_body()
    thread_id = payload.get("threadId")
    user = current_user()
    thread_for(thread_id, user)
    agent = Agent(str(thread_id), spec, services().store, owner=user)
    translator = AGUIInputTranslator()
    client_messages = payload.get("messages")
    if not isinstance(client_messages, list):
        raise BadRequest("'messages' must be a list.")
    seed: dict[str, Any] = {
        "runId": payload.get("runId"),
        "state": payload.get("state") if isinstance(payload.get("state"), dict) else {},
        "messages": _seed_messages(agent, spec, client_messages),
    }
    if translator.is_continuation(payload):
        staged = agent.submit_inputs(payload, translator)
        forwarded = payload.get("forwardedProps")
        stop = isinstance(forwarded, dict) and forwarded.get("stopAfterToolCall") is True
        job = continue_job(agent, agent_id, staged, "agui", seed, stop)
        return deliver("relayline.continue_run", job, HEADERS)
    found = translator.new_turn_message(payload)
    tools = translator.tools(payload, backend_tool_names=[t.name for t in spec.tools])
    refuse_if_busy(agent)
    message = Message.user(str(found["content"]), id=str(found["id"]))
    job = turn_job(agent, agent_id, message, tools, "agui", seed)
    return deliver("relayline.run_turn", job, HEADERS)


@bp.post("/agui")
def post_agui() -> Response:
    return _run(DEFAULT_AGENT)


@bp.post("/agent/<agent_id>")
def post_agent(agent_id: str) -> Response:
    return _run(agent_id)


@bp.get("/agent/<agent_id>")
def get_agent(agent_id: str) -> Response:
    """The configuration @cyronius/lm-ag-ui loads."""
    spec = _spec(agent_id)
    tools = [
        {
            "name": t.name,
            "description": t.description,
            "isFrontend": False,
            "parameters": t.input_schema,
        }
        for t in spec.tools
    ] + [
        {
            "name": t.name,
            "description": t.description,
            "isFrontend": True,
            "parameters": t.input_schema,
        }
        for t in spec.frontend_tools
    ]
    suggestions = [{"suggestion": s, "isPriority": i == 0} for i, s in enumerate(spec.suggestions)]
    return jsonify({"tools": tools, "suggestions": suggestions, "config": {}})


@bp.get("/agui/threads/<thread_id>")
def get_thread(thread_id: str) -> Response:
    thread_for(thread_id, current_user(), must_exist=True)
    limit = request.args.get("limit", "50")
    if not limit.isdigit() or not 1 <= int(limit) <= 500:
        raise BadRequest("'limit' must be an integer from 1 to 500.")
    spec = services().registry.spec()
    payload = agui_thread_payload(
        services().store, thread_id, int(limit), request.args.get("before"), redact=_redact(spec)
    )
    return jsonify(payload)
