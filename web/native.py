"""The native protocol: ``/api/threads/<id>/...`` with native SSE."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from relayline.shared.agent import Agent, Continuation
from relayline.shared.batch import request_from_record
from relayline.shared.errors import InputTranslationError
from relayline.shared.failures import stored_failure
from relayline.shared.ids import new_id, new_run_id
from relayline.shared.jobs import ContinueJob, TurnJob, UserTurn
from relayline.web.auth import current_user, thread_for
from relayline.web.bounds import MAX_MESSAGE_CHARS, check_answers, check_size
from relayline.web.cursor import START, Cursor
from relayline.web.dispatch import current_run, deliver
from relayline.web.multitask import make_room, strategy
from relayline.web.recovering import shown_status
from relayline.web.resume import resume_native
from relayline.web.schemas import AnswersBody, NativeMessageBody, parse_body
from relayline.web.services import services

bp = Blueprint("native", __name__)


def _agent(thread_id: str, *, must_exist: bool) -> Agent:
    user = current_user()
    thread_for(thread_id, user, must_exist=must_exist)
    return Agent(thread_id, services().registry.spec(), services().store, owner=user)


@bp.post("/api/threads/<thread_id>/messages")
def post_message(thread_id: str) -> Response:
    user = current_user()
    thread = thread_for(thread_id, user)
    content = parse_body(NativeMessageBody).content
    if not content.strip():  # the model refuses a missing or empty one; blank is refused here
        raise InputTranslationError(NativeMessageBody.refusals["content"])
    check_size(content, MAX_MESSAGE_CHARS, "'content'")
    chosen = strategy(services().registry.spec())
    now = make_room(thread_id, current_run(thread), chosen)
    job = TurnJob(
        thread_id=thread_id,
        owner=user,
        protocol="native",
        run_id=new_run_id(),
        message=UserTurn(new_id("msg"), content),
    )
    return deliver(job, now=now)


def _continue(staged: Continuation, agent: Agent) -> Response:
    job = ContinueJob(
        thread_id=agent.thread_id,
        owner=agent.owner,
        protocol="native",
        run_id=staged.run_id,
        attempt=staged.attempt,
        answers=staged.answers or {},
    )
    return deliver(job, claim=staged.adds_answers)


@bp.post("/api/threads/<thread_id>/tool-results")
def post_tool_results(thread_id: str) -> Response:
    agent = _agent(thread_id, must_exist=True)
    body = parse_body(AnswersBody).root
    check_answers(body)
    return _continue(agent.submit_tool_results(body), agent)


@bp.post("/api/threads/<thread_id>/approvals")
def post_approvals(thread_id: str) -> Response:
    agent = _agent(thread_id, must_exist=True)
    body = parse_body(AnswersBody).root
    check_answers(body)
    return _continue(agent.submit_approval_decisions(body), agent)


@bp.get("/api/threads/<thread_id>")
def get_thread(thread_id: str) -> Response:
    """The thread's current run, read from the store alone: it answers, and says why a
    run failed, even while the agent cannot be loaded."""
    thread_for(thread_id, current_user(), must_exist=True)
    record = services().store.current_run(thread_id)
    run = None
    if record is not None:
        interrupt = request_from_record(record)
        run = {
            "runId": record.run_id,
            # "recovering" while the run's worker is gone (web.recovering)
            "status": shown_status(services(), record),
            "attempt": record.attempt,
            "interrupt": interrupt.to_json() if interrupt else None,
            # tokens of every model call of the run, summed; null until one reports usage
            "usage": record.checkpoint.get("usage"),
            # {code, message} of a failed run (relayline.shared.failures); else null
            "error": stored_failure(record.checkpoint.get("failure"), record.error),
        }
    return jsonify({"threadId": thread_id, "run": run})


@bp.get("/api/threads/<thread_id>/stream")
def resume_stream(thread_id: str) -> Response:
    """The thread's newest segment from after the cursor (``Last-Event-ID`` or
    ``?after=<sequence>``; from its start without one), then live to its end; 204 when
    there is nothing more to send (nothing kept and no cursor, or the cursor holds the
    end), 410 when the cursor is older than what is kept."""
    thread_for(thread_id, current_user(), must_exist=True)
    return resume_native(thread_id, _cursor())


def _cursor() -> Cursor:
    """``Last-Event-ID``, else ``?after``; both are checked when both are sent."""
    given = [request.headers.get("Last-Event-ID"), *request.args.getlist("after")]
    found = [Cursor.parse(raw) for raw in given if raw is not None]
    return found[0] if found else START
