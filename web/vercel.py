"""The Vercel AI SDK UI message stream: ``POST /api/chat`` and ``GET /api/chat/<id>``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from werkzeug.exceptions import BadRequest

from shared.adapters import VercelAIAdapter, ui_messages
from shared.agent import Agent
from shared.messages import Message
from shared.translators import VercelAIInputTranslator
from web.auth import current_user, thread_for
from web.dispatch import continue_job, deliver, json_body, refuse_if_busy, turn_job
from web.services import services

bp = Blueprint("vercel", __name__)
HEADERS = VercelAIAdapter().headers()


@bp.post("/api/chat")
def post_chat() -> Response:
    payload = json_body()
    user = current_user()
    thread_for(payload.get("id"), user)
    spec = services().registry.spec()
    agent = Agent(str(payload["id"]), spec, services().store, owner=user)
    if payload.get("trigger", "submit-message") != "submit-message":
        raise BadRequest("Only trigger 'submit-message' is supported.")
    translator = VercelAIInputTranslator()
    if translator.is_continuation(payload):
        staged = agent.submit_inputs(payload, translator)
        last = payload["messages"][-1]
        seed = {"messageId": last.get("id"), "parts": last.get("parts") or []}
        job = continue_job(agent, "default", staged, "vercel", seed)
        return deliver("relayline.continue_run", job, HEADERS)
    message_id, text = translator.new_turn_text(payload)
    refuse_if_busy(agent)
    message = Message.user(text) if message_id is None else Message.user(text, id=message_id)
    job = turn_job(agent, "default", message, [], "vercel", {})
    return deliver("relayline.run_turn", job, HEADERS)


@bp.get("/api/chat/<thread_id>")
def get_chat(thread_id: str) -> Response:
    thread_for(thread_id, current_user(), must_exist=True)
    store = services().store
    spec = services().registry.spec()
    messages = ui_messages(
        store.messages(thread_id),
        store.current_run(thread_id),
        tools=[*spec.tools, *spec.frontend_tools],
    )
    return jsonify({"messages": messages})
