"""The Vercel AI SDK UI message stream: ``POST /api/chat`` and ``GET /api/chat/<id>``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from relayline.channels.stream.log import LogGoneError
from relayline.shared.agent import Agent
from relayline.shared.errors import InputTranslationError
from relayline.shared.ids import new_id, new_run_id
from relayline.shared.jobs import ContinueJob, TurnJob, UserTurn
from relayline.shared.protocols.vercel import VercelAIInputTranslator, ui_messages
from relayline.shared.texts import EMPTY_TURN
from relayline.web.auth import current_user, thread_for
from relayline.web.bounds import check_vercel
from relayline.web.dispatch import current_run, deliver, json_body, refuse_replay
from relayline.web.multitask import make_room, strategy
from relayline.web.resume import active_reader, resumed_response
from relayline.web.schemas import ChatBody, parse_body
from relayline.web.services import services

bp = Blueprint("vercel", __name__)


@bp.post("/api/chat")
def post_chat() -> Response:
    payload = json_body()
    check_vercel(payload)
    user = current_user()
    thread = thread_for(payload.get("id"), user, field="id")
    thread_id = str(payload["id"])
    agent = Agent(thread_id, services().registry.spec(), services().store, owner=user)
    parse_body(ChatBody, payload)  # the trigger and the shape (sizes: check_vercel)
    translator = VercelAIInputTranslator()
    if translator.is_continuation(payload):
        staged = agent.submit_inputs(payload, translator)
        last = payload["messages"][-1]
        continued = ContinueJob(
            thread_id=thread_id,
            owner=user,
            protocol="vercel",
            run_id=staged.run_id,
            seed={"messageId": last.get("id"), "parts": last.get("parts") or []},
            attempt=staged.attempt,
            answers=staged.answers or {},
        )
        return deliver(continued, claim=staged.adds_answers)
    turn = translator.new_turn_text(payload)
    if not turn.text.strip():
        raise InputTranslationError(EMPTY_TURN)  # as AG-UI and native refuse it
    now = make_room(thread_id, current_run(thread), strategy(agent.spec))
    message = UserTurn(turn.id or new_id("msg"), turn.text)
    stored = services().store.stored_message_ids(thread_id, [message.id])
    refuse_replay(thread_id, message.id, stored)
    job = TurnJob(
        thread_id=thread_id, owner=user, protocol="vercel", run_id=new_run_id(), message=message
    )
    return deliver(job, now=now)


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


@bp.get("/api/chat/<thread_id>/stream")
def resume_chat(thread_id: str) -> Response:
    """What ``useChat({ resume: true })`` asks on every page load: 204 when the chat has
    no active segment, else that segment replayed from its first chunk (its ``start``
    names the assistant message), then live to its end. A chat that does not exist yet
    has nothing active (204); someone else's chat is a 404 as everywhere."""
    thread_for(thread_id, current_user())
    try:
        reader = active_reader(thread_id, "vercel", after=-1)
    except LogGoneError:
        # Its start was trimmed away: a torn replay would break the client, which
        # loads the stored messages instead.
        return Response(status=204)
    if reader is None:
        return Response(status=204)
    return resumed_response(reader, thread_id, "vercel", ids=False)
