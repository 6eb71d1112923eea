"""AG-UI: ``POST /agui`` (the default agent), ``POST|GET /agent/<agentId>``, and reload
through ``GET /agui/threads/<id>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import BadRequest, NotFound

from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.ids import new_id, new_run_id
from relayline.shared.jobs import DEFAULT_AGENT, ClientSeed, ContinueJob, TurnJob, UserTurn
from relayline.shared.messages import Message
from relayline.shared.persistence.store import Store
from relayline.shared.protocols import agui
from relayline.shared.protocols.agui.hydrate import Redact
from relayline.shared.protocols.agui.seed import lookup_ids, unstored
from relayline.shared.protocols.agui.wire import InterruptJSON, MessageJSON
from relayline.shared.tools import redactions
from relayline.web.auth import current_user, thread_for
from relayline.web.bounds import check_agui, check_id
from relayline.web.dispatch import current_run, deliver, json_body, refuse_replay
from relayline.web.multitask import make_room, strategy
from relayline.web.recovering import ShownStatus, shown_status
from relayline.web.schemas import RunAgentInputBody, parse_body
from relayline.web.services import services
from relayline.web.stop import disconnect_policy

bp = Blueprint("agui", __name__)


def agent_spec(agent_id: str) -> AgentSpec:
    if agent_id not in services().registry:
        raise NotFound(f"Agent '{agent_id}' was not found.")
    return services().registry.spec(agent_id)


def _run(agent_id: str) -> Response:
    """At most three queries before enqueueing: the thread, its current run (inside
    the continuation's staging, or for the busy check), and which of the client's
    message ids the thread stores."""
    spec = agent_spec(agent_id)
    payload = json_body()
    check_agui(payload)
    on_disconnect = disconnect_policy(payload.get("forwardedProps"), spec.on_disconnect)
    user = current_user()
    thread = thread_for(payload.get("threadId"), user)
    thread_id = str(payload["threadId"])
    client_messages = parse_body(RunAgentInputBody, payload).messages
    state = payload.get("state")
    translator = agui.AGUIInputTranslator()
    agent = Agent(thread_id, spec, services().store, owner=user)
    if translator.is_continuation(payload):
        staged = agent.submit_inputs(payload, translator)
        forwarded = payload.get("forwardedProps")
        stop = isinstance(forwarded, dict) and forwarded.get("stopAfterToolCall") is True
        seed = _seed(payload, state, client_messages, set())
        job: TurnJob | ContinueJob = ContinueJob(
            thread_id=thread_id,
            agent_id=agent_id,
            owner=user,
            protocol="agui",
            run_id=staged.run_id,
            seed=seed,
            attempt=staged.attempt,
            answers=staged.answers or {},
            stop_after_tool_call=stop,
        )
        return deliver(job, on_disconnect, claim=staged.adds_answers)
    turn = translator.new_turn(payload)
    tools = translator.tools(payload, backend_tool_names=[t.name for t in spec.tools])
    now = make_room(thread_id, current_run(thread), strategy(spec, payload.get("forwardedProps")))
    message = UserTurn(turn.id or new_id("msg"), turn.text)
    job = TurnJob(
        thread_id=thread_id,
        agent_id=agent_id,
        owner=user,
        protocol="agui",
        run_id=new_run_id(),
        seed=_seed(payload, state, client_messages, {message.id}),
        message=message,
        frontend_tools=tuple(tools),
    )
    return deliver(job, on_disconnect, now=now)


def _seed(
    payload: Mapping[str, Any], state: object, client: list[Any], new_ids: set[str]
) -> ClientSeed:
    """The client's run id and state, and the messages it holds that the store may not
    (one indexed lookup; it also refuses a new turn whose message id is stored)."""
    thread_id = str(payload["threadId"])
    stored = services().store.stored_message_ids(thread_id, [*new_ids, *lookup_ids(client)])
    for message_id in new_ids:
        refuse_replay(thread_id, message_id, stored)
    run_id = payload.get("runId")
    return {
        # Minted here when the client sent none: a response that starts the run itself
        # while the turn waits for a worker (web.waiting) names the worker's run id.
        "runId": run_id if isinstance(run_id, str) else new_id("run"),
        "state": state if isinstance(state, dict) else {},
        "messages": unstored(client, stored),
    }


@bp.post("/agui")
def post_agui() -> Response:
    return _run(DEFAULT_AGENT)


@bp.post("/agent/<agent_id>")
def post_agent(agent_id: str) -> Response:
    return _run(agent_id)


@bp.get("/agent/<agent_id>")
def get_agent(agent_id: str) -> Response:
    """The configuration @cyronius/lm-ag-ui loads."""
    spec = agent_spec(agent_id)
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
        services().store,
        thread_id,
        int(limit),
        check_id(request.args.get("before"), "'before'"),  # a stored message id
        redact=redactions(spec.tools),
    )
    if payload["status"] == "running":  # "recovering" while its worker is gone
        record = services().store.current_run(thread_id)
        if record is not None:
            payload["status"] = shown_status(services(), record)
    return jsonify(payload)


class ThreadPayload(TypedDict):
    messages: list[MessageJSON]
    interrupts: list[InterruptJSON]
    status: ShownStatus | None
    before: str | None
    #: ids of the answers on the page that a person stopped before they finished
    stopped: list[str]


_REPORTED_STATUSES = ("suspended", "running", "failed", "cancelled")


def agui_thread_payload(
    store: Store,
    thread_id: str,
    limit: int = 50,
    before: str | None = None,
    *,
    redact: Redact | None = None,
) -> ThreadPayload:
    """The body of ``GET /agui/threads/<id>``: ``{messages, interrupts, status, before,
    stopped}``.

    ``status`` is the current run's status while it matters to the UI (suspended,
    running, failed, cancelled), else None; ``stopped`` lists the answers a person
    stopped (AG-UI messages have no field for it); ``before`` is the stored id to page
    back from, or None when nothing is older. Page with stored ids only: derived ids (``result_…``,
    ``reasoning_…``) name no stored message.
    """
    run = store.current_run(thread_id)
    page = store.messages(thread_id, limit=limit, before=before)
    latest = before is None
    if latest and run is not None and run.status in _REPORTED_STATUSES:
        page = _reach_back(store, thread_id, page, run.start.get("message"), limit)
    older = bool(page) and bool(store.messages(thread_id, limit=1, before=page[0].id))
    hydrated = agui.hydrate(page, run if latest else None, redact=redact)
    return {
        "messages": hydrated["messages"],
        "interrupts": hydrated["interrupts"],
        "status": run.status if run is not None and run.status in _REPORTED_STATUSES else None,
        "before": page[0].id if older else None,
        "stopped": [m.id for m in page if m.role == "assistant" and m.meta.get("stopped")],
    }


def _reach_back(
    store: Store, thread_id: str, page: list[Message], start_id: Any, limit: int
) -> list[Message]:
    """Extend the latest page back to the open turn's user message: a page that cut
    the turn in two would show that message again once the older page loads."""
    if not isinstance(start_id, str):
        return page
    while page and all(m.id != start_id for m in page):
        older = store.messages(thread_id, limit=limit, before=page[0].id)
        if not older:
            break
        page = older + page
    return page
