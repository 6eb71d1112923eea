"""The native protocol: ``/api/threads/<id>/...`` with native SSE."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, Response, current_app, jsonify, request
from redis.exceptions import RedisError
from werkzeug.exceptions import BadRequest, Gone

from channels import ChannelReadError, active_segment
from channels.log import LogGoneError, LogReader
from shared.agent import Agent, Continuation
from shared.errors import InputTranslationError
from shared.ids import new_id, new_run_id
from shared.jobs import ContinueJob, TurnJob, UserTurn
from shared.protocols import failure_frames
from shared.protocols.native import NativeAdapter
from shared.sse import HEARTBEAT as SSE_HEARTBEAT
from shared.sse import encode_event
from web.auth import current_user, thread_for
from web.dispatch import (
    HEARTBEAT_SECONDS,
    SSE_HEADERS,
    current_run,
    deliver,
    json_body,
    refuse_if_busy,
)
from web.services import services

bp = Blueprint("native", __name__)


def _agent(thread_id: str, *, must_exist: bool) -> Agent:
    user = current_user()
    thread_for(thread_id, user, must_exist=must_exist)
    return Agent(thread_id, services().registry.spec(), services().store, owner=user)


@bp.post("/api/threads/<thread_id>/messages")
def post_message(thread_id: str) -> Response:
    user = current_user()
    thread = thread_for(thread_id, user)
    content = json_body().get("content")
    if not isinstance(content, str) or not content.strip():
        raise InputTranslationError("The body needs a non-empty string 'content'.")
    refuse_if_busy(thread_id, current_run(thread))
    job = TurnJob(
        thread_id=thread_id,
        owner=user,
        protocol="native",
        run_id=new_run_id(),
        message=UserTurn(new_id("msg"), content),
    )
    return deliver(job)


def _continue(staged: Continuation, agent: Agent) -> Response:
    job = ContinueJob(
        thread_id=agent.thread_id,
        owner=agent.owner,
        protocol="native",
        run_id=staged.run_id,
        attempt=staged.attempt,
        answers=staged.answers or {},
    )
    return deliver(job)


@bp.post("/api/threads/<thread_id>/tool-results")
def post_tool_results(thread_id: str) -> Response:
    agent = _agent(thread_id, must_exist=True)
    return _continue(agent.submit_tool_results(json_body()), agent)


@bp.post("/api/threads/<thread_id>/approvals")
def post_approvals(thread_id: str) -> Response:
    agent = _agent(thread_id, must_exist=True)
    return _continue(agent.submit_approval_decisions(json_body()), agent)


@bp.get("/api/threads/<thread_id>")
def get_thread(thread_id: str) -> Response:
    agent = _agent(thread_id, must_exist=True)
    record = agent.inspect()
    state = agent.state()
    run = None
    if record is not None and state is not None:
        run = {
            "runId": record.run_id,
            "status": record.status,
            "attempt": record.attempt,
            "interrupt": state.interrupt.to_json() if state.interrupt else None,
        }
    return jsonify({"threadId": thread_id, "run": run})


@bp.get("/api/threads/<thread_id>/stream")
def resume_stream(thread_id: str) -> Response:
    """The thread's active segment from after the cursor (``Last-Event-ID`` or
    ``?after=<sequence>``; from its start without one), then live to its end; 204 when
    no segment is active, 410 when the cursor is older than what is kept."""
    thread_for(thread_id, current_user(), must_exist=True)
    after = _cursor()
    svc = services()
    stream_id = active_segment(svc.redis, thread_id)
    if stream_id is None:
        return Response(status=204)
    reader = LogReader(svc.redis, stream_id, after=after)
    try:
        reader.check()
    except LogGoneError as exc:
        raise Gone(exc.message) from exc
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    body = _resumed(reader, thread_id, heartbeat, svc.settings.relay_timeout)
    return Response(body, headers={**NativeAdapter.HEADERS, **SSE_HEADERS})


def _cursor() -> int:
    raw = request.headers.get("Last-Event-ID") or request.args.get("after")
    if raw is None:
        return -1
    if not raw.strip().lstrip("-").isdigit() or int(raw) < -1:
        raise BadRequest("The cursor (Last-Event-ID or 'after') must be a sequence number.")
    return int(raw)


def _resumed(reader: LogReader, thread_id: str, heartbeat: float, timeout: float) -> Iterator[str]:
    """Native SSE frames, each with ``id: <sequence>`` so EventSource reconnects itself."""
    # A comment first: the headers go out now, not with the first event, which may be
    # a long way off (the cursor was at the live edge).
    yield SSE_HEARTBEAT
    started = False
    try:
        for envelope in reader.envelopes(wait=heartbeat, timeout=timeout):
            if envelope is None:
                yield SSE_HEARTBEAT
                continue
            if envelope.is_terminal:
                return
            started = True
            yield f"id: {envelope.sequence}\n" + encode_event(envelope.to_event())
    except (ChannelReadError, RedisError) as exc:
        for frame in failure_frames("native", thread_id, {}, exc, started=started):
            yield encode_event(frame)
