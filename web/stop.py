"""Stop a thread's run: the routes of every client family and the disconnect policy.

- native ``POST /api/threads/<id>/cancel`` answers ``{threadId, stopped, runId, status}``;
- Vercel ``POST /api/chat/<id>/stop`` (the endpoint the AI SDK's docs ask for) takes
  ``{activeStreamId?, assistantMessage?}`` and answers ``{success: true, stopped}``
  (and ``status`` when not stopped);
  an ``activeStreamId`` that no longer names the chat's running segment stops nothing
  (a late Stop must never end a newer answer); the worker keeps the partial answer, so
  ``assistantMessage`` is not needed and is ignored;
- CopilotKit ``POST /agent/<agentId>/stop/<threadId>`` and ``POST /agui/stop/<threadId>``
  answer as CopilotKit's runtime does: ``{stopped: true, interrupt: {type: "RUN_ERROR",
  message: "Run stopped by user", code: "STOPPED"}}`` or ``{stopped: false, message,
  status}``.

Every route is authorized like the others: an unknown or foreign thread is a 404.
Stopping a finished run changes nothing and answers ``stopped: false`` with the status
it ended with (``completed`` when it finished first). ``stopped: true`` is decided in
the database (shared.agent.stop): the run then ends ``cancelled``, whatever its worker
was about to write.
"""

from __future__ import annotations

import dataclasses
import logging

from flask import Blueprint, Response, jsonify, request
from redis.exceptions import RedisError
from werkzeug.exceptions import BadRequest

from relayline.channels.runs.claims import stop_before_start
from relayline.channels.runs.stops import announce_stop
from relayline.channels.stream.log import active_segment
from relayline.shared.agent.spec import DISCONNECT_POLICIES, DisconnectPolicy
from relayline.shared.agent.stop import StopOutcome, stop_run, stop_thread, wait_stopped
from relayline.shared.jobs import DEFAULT_AGENT
from relayline.web.auth import current_user, thread_for
from relayline.web.recovering import ShownStatus, shown_status
from relayline.web.schemas import ChatStopBody, parse_body
from relayline.web.sending import release_if_idle
from relayline.web.services import Services, services

logger = logging.getLogger("relayline.web")

bp = Blueprint("stop", __name__)

#: seconds a stop waits for a started task to admit its run (it took the segment's start
#: a moment before; one refused admission, or far slower, is answered "not stopped")
ADMISSION_WAIT = 10.0


def stop(svc: Services, thread_id: str) -> StopOutcome:
    """Stop the thread's run (already authorized) and wake its worker."""
    outcome = stop_thread(svc.store, thread_id)
    if not outcome.stopped:
        outcome = _stop_unstarted(svc, thread_id, outcome)
    if outcome.stopped and not outcome.running:
        release_if_idle(svc, thread_id)  # a settled wait frees the thread at once
    if outcome.running and outcome.run_id is not None:
        try:
            announce_stop(svc.redis, outcome.run_id)
        except RedisError as exc:
            # Recorded all the same: the loop reads the record before each model call
            # and tool, so the stop lands later instead of within a round trip.
            logger.warning("could not announce the stop of run %s: %s", outcome.run_id, exc)
    return outcome


def stop_and_wait(svc: Services, thread_id: str, timeout: float) -> str | None:
    """Stop the thread's run and wait at most ``timeout`` seconds for its executor to
    end it; the id of a run still running after that (None: nothing runs now)."""
    outcome = stop(svc, thread_id)
    if not outcome.running or outcome.run_id is None:
        return None
    ended = wait_stopped(svc.store, thread_id, outcome.run_id, timeout)
    return outcome.run_id if ended is not None and ended.status == "running" else None


def _stop_unstarted(svc: Services, thread_id: str, outcome: StopOutcome) -> StopOutcome:
    """The thread's active segment, when its run was not found running: a turn still
    waiting in the broker (no run yet), or one whose task started but has not admitted
    its run, or whose run just ended (the terminal clears the pointer a moment later).
    The stop and the task race for the segment's start (channels.runs.claims): a stop
    that wins is a stop (the task stops its run as it begins); else the task's run is
    stopped through the database, which says whether it ended first."""
    try:
        segment = active_segment(svc.redis, thread_id)
        if segment is None:
            return outcome
        start = stop_before_start(svc.redis, segment.segment_id, svc.settings.stream_max_age)
    except RedisError as exc:
        logger.warning("could not stop the waiting turn of thread %s: %s", thread_id, exc)
        return outcome
    if start.stopped:
        return dataclasses.replace(outcome, stopped=True, status="running", running=True)
    if start.run_id is None or start.run_id == outcome.run_id:
        return outcome  # the run stop_thread found ended: that is the answer
    return stop_run(svc.store, thread_id, start.run_id, wait=ADMISSION_WAIT)


def disconnect_policy(
    forwarded: object = None, default: DisconnectPolicy = "continue"
) -> DisconnectPolicy:
    """``?onDisconnect=`` (or AG-UI ``forwardedProps.onDisconnect``), else ``default``
    (the agent's ``AgentSpec.on_disconnect``): ``continue`` (a reload resumes the run)
    or ``cancel`` (a dropped connection stops it)."""
    raw = request.args.get("onDisconnect")
    if raw is None and isinstance(forwarded, dict):
        raw = forwarded.get("onDisconnect", forwarded.get("on_disconnect"))
    if raw is None:
        return default
    for known in DISCONNECT_POLICIES:
        if raw == known:
            return known
    raise BadRequest("'onDisconnect' must be 'continue' or 'cancel'.")


@bp.post("/api/threads/<thread_id>/cancel")
def cancel_native(thread_id: str) -> Response:
    thread_for(thread_id, current_user(), must_exist=True)
    svc = services()
    outcome = stop(svc, thread_id)
    status: ShownStatus | None = outcome.status
    record = (
        svc.store.run(thread_id, outcome.run_id) if outcome.running and outcome.run_id else None
    )
    if record is not None:
        status = shown_status(svc, record)  # "recovering" while its worker is gone
    return jsonify(
        {
            "threadId": thread_id,
            "stopped": outcome.stopped,
            "runId": outcome.run_id,
            "status": status,
        }
    )


@bp.post("/api/chat/<thread_id>/stop")
def stop_chat(thread_id: str) -> Response:
    thread_for(thread_id, current_user(), must_exist=True)
    body = parse_body(ChatStopBody) if request.get_data() else ChatStopBody()
    segment_id = body.activeStreamId
    svc = services()
    if segment_id is not None and not _is_active(svc, thread_id, segment_id):
        current = svc.store.current_run(thread_id)
        status = None if current is None else current.status
        return jsonify({"success": True, "stopped": False, "status": status})
    outcome = stop(svc, thread_id)
    if outcome.stopped:
        return jsonify({"success": True, "stopped": True})
    return jsonify({"success": True, "stopped": False, "status": outcome.status})


def _is_active(svc: Services, thread_id: str, segment_id: str) -> bool:
    active = active_segment(svc.redis, thread_id)
    return active is not None and active.segment_id == segment_id


@bp.post("/agui/stop/<thread_id>")
def stop_agui(thread_id: str) -> Response:
    return stop_agent(DEFAULT_AGENT, thread_id)


@bp.post("/agent/<agent_id>/stop/<thread_id>")
def stop_agent(agent_id: str, thread_id: str) -> Response:
    svc = services()
    if agent_id not in svc.registry:
        return _json({"error": "Agent not found"}, 404)
    thread_for(thread_id, current_user(), must_exist=True)
    outcome = stop(svc, thread_id)
    if not outcome.stopped:
        message = f"No active run for thread '{thread_id}'."
        return jsonify({"stopped": False, "message": message, "status": outcome.status})
    interrupt = {"type": "RUN_ERROR", "message": "Run stopped by user", "code": "STOPPED"}
    return jsonify({"stopped": True, "interrupt": interrupt})


def _json(body: dict[str, object], status: int) -> Response:
    response = jsonify(body)
    response.status_code = status
    return response
