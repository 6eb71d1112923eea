"""Enqueue a validated turn or continuation and deliver its output: relayed as one SSE
response (enqueue by task name, then read the segment's log from its start through the
app's LogMultiplexer), or pushed (202 + where to listen).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Literal

from flask import Response, current_app, jsonify, request, url_for
from redis.client import Pipeline
from redis.exceptions import RedisError
from werkzeug.exceptions import BadRequest

from relayline.channels import (
    TERMINALS,
    ActiveSegment,
    ChannelReadError,
    LogLimits,
    SegmentReplacedError,
)
from relayline.channels.errors import ClientTooSlowError
from relayline.channels.mercure import thread_topic
from relayline.channels.pusher import thread_channel
from relayline.channels.runs.queued_turns import QueuedTurn, queue_turn
from relayline.channels.stream.log import queue_announce
from relayline.channels.stream.reader import LogMultiplexer
from relayline.shared import metrics
from relayline.shared.agent.spec import DisconnectPolicy
from relayline.shared.errors import (
    DeliveryError,
    RunElsewhereError,
    RunInFlightError,
    StreamLostError,
    WorkflowError,
)
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import (
    CONTINUE_RUN,
    RUN_TURN,
    ClientSeed,
    ContinueJob,
    ProtocolName,
    Target,
    TurnJob,
)
from relayline.shared.persistence import RunRecord, ThreadRecord
from relayline.shared.protocols import failure_frames, protocol
from relayline.shared.sse import HEARTBEAT as SSE_HEARTBEAT
from relayline.shared.sse import encode_event
from relayline.shared.texts import (
    delivery_not_configured,
    run_recovered,
    stream_lost,
    thread_busy,
)
from relayline.web.admission import QueueFullError, admit_turn, retract, withdraw
from relayline.web.bounds import json_body as json_body  # re-exported: it lived here
from relayline.web.continuations import claim_answer, release_answer
from relayline.web.cursor import frame_id
from relayline.web.direct import ClientGone, DirectSocket, direct_socket, frames_of
from relayline.web.sending import release_if_idle, send_by_name
from relayline.web.services import Services, services
from relayline.web.slow_clients import ClientBudget, client_budget
from relayline.web.stop import disconnect_policy, stop
from relayline.web.waiting import WaitTimes, WorkerWait

logger = logging.getLogger("relayline.web")

PushKind = Literal["pusher", "mercure"]

#: the response header naming a relayed or resumed segment's stream id
STREAM_ID_HEADER = "X-Relayline-Stream-Id"

#: seconds of silence between SSE comment heartbeats
HEARTBEAT_SECONDS = 15.0

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def current_run(thread: ThreadRecord | None) -> RunRecord | None:
    """The run holding ``thread`` (one query; none for a new thread)."""
    if thread is None or thread.current_run_id is None:
        return None
    return services().store.run(thread.id, thread.current_run_id)


def refuse_if_busy(thread_id: str, record: RunRecord | None) -> None:
    """A new turn while a run holds the thread is a 409 before anything is enqueued."""
    if record is not None and record.status in ("running", "suspended"):
        raise RunInFlightError(thread_busy(thread_id, record), code="THREAD_BUSY")


def refuse_replay(thread_id: str, message_id: str, stored_ids: Collection[str]) -> None:
    """A new turn's message id already stored on the thread is a conflict."""
    if message_id in stored_ids:
        raise WorkflowError(f"Message '{message_id}' is already part of thread '{thread_id}'.")


def deliver(
    job: TurnJob | ContinueJob,
    on_disconnect: DisconnectPolicy | None = None,
    *,
    now: bool = True,
    claim: bool = True,
) -> Response:
    """Relay (one SSE response) or push (202 with where to listen), as the request's
    ``?delivery=`` or RELAYLINE_DELIVERY asks. ``on_disconnect`` (default: the request's
    ``?onDisconnect=``, else the agent's ``AgentSpec.on_disconnect``) says whether a
    relayed client that goes away stops the run; ``now=False`` queues a new turn behind
    the thread's run (web.multitask). A continuation claims the interruption it answers
    (web.continuations) unless ``claim=False``: it adds no answer
    (``Continuation.adds_answers``)."""
    name = request.args.get("delivery") or services().settings.delivery
    if name not in DELIVERIES:
        *others, last = DELIVERIES
        raise BadRequest(f"Unknown delivery {name!r}; use {', '.join(others)} or {last}.")
    agent_default = services().registry.spec(job.agent_id).on_disconnect
    policy = on_disconnect or disconnect_policy(default=agent_default)
    send: Sender = _send if now or not isinstance(job, TurnJob) else _queue
    if isinstance(job, ContinueJob) and claim:
        send = _send_claimed
    return DELIVERIES[name](job, send, policy)


@dataclasses.dataclass(frozen=True)
class Sent:
    """A job on its way: its segment's stream id, and its place in the thread's queue
    (None: sent at once)."""

    segment_id: str
    queued: int | None = None


Sender = Callable[[TurnJob | ContinueJob], Sent]


def _send_claimed(job: TurnJob | ContinueJob) -> Sent:
    """``_send`` a continuation that answers its run's interruption only if no other
    request answered it first (409 before anything is announced or sent)."""
    return _send(job, claim=True)


def _send(job: TurnJob | ContinueJob, *, claim: bool = False) -> Sent:
    """Enqueue ``job`` as a new segment, announced as the thread's active one first (so
    a reload finds it from now on)."""
    svc = services()
    segment_id = new_segment_id()
    segment = ActiveSegment(job.protocol, segment_id)
    #: the continuation that must first claim its run's interruption (web.continuations)
    answering = job if claim and isinstance(job, ContinueJob) else None
    limits = LogLimits.from_settings(svc.settings)

    def announced(pipe: Pipeline) -> None:
        queue_announce(pipe, job.thread_id, segment, limits)

    if answering is not None:
        claim_answer(svc, answering, segment_id)  # 409 for all but the first answer
    try:
        # 429 before anything is announced or sent; an admitted turn is announced in
        # the same round trip when no limit is set.
        admit_turn(svc, segment_id, job.owner, then=announced)
        job = dataclasses.replace(job, segment_id=segment_id)
        task = RUN_TURN if isinstance(job, TurnJob) else CONTINUE_RUN
        send_by_name(svc, task, job.to_json())
    except BaseException as exc:
        if answering is not None:
            release_answer(svc, answering, segment_id)
        if not isinstance(exc, QueueFullError):  # refused: nothing was counted or announced
            # Not sent (Redis or the broker is down: a 503): leave no count and no
            # announced segment.
            withdraw(svc, segment_id, job.owner)
            retract(svc, job.thread_id, segment)
        raise
    return Sent(segment_id)


def _queue(job: TurnJob | ContinueJob) -> Sent:
    """Queue a new turn behind the thread's run; released at once when that run ended
    in the meantime (its ender found the queue still empty)."""
    assert isinstance(job, TurnJob)  # only new turns wait their turn
    svc = services()
    segment_id = new_segment_id()
    ready = dataclasses.replace(job, segment_id=segment_id).to_json()
    turn: QueuedTurn = {
        "task": RUN_TURN,
        "job": ready,
        "protocol": job.protocol,
        "streamId": segment_id,
    }
    position = queue_turn(svc.redis, job.thread_id, turn, svc.settings.stream_max_age)
    release_if_idle(svc, job.thread_id)
    return Sent(segment_id, position)


def _pusher_where(thread_id: str) -> dict[str, str]:
    pusher = services().settings.pusher
    if not pusher.configured:
        raise BadRequest(delivery_not_configured("Pusher"))
    assert pusher.key  # configured says so
    return {
        "channel": thread_channel(thread_id, encrypted=pusher.encrypted),
        "key": pusher.key,
        "authEndpoint": url_for("relayline.push.pusher_auth"),
    }


def _mercure_where(thread_id: str) -> dict[str, str]:
    settings = services().settings
    if not settings.mercure.configured:
        raise BadRequest(delivery_not_configured("Mercure"))
    assert settings.mercure.hub_url  # configured says so
    return {
        "hubUrl": settings.mercure.hub_url,
        "topic": thread_topic(settings.public_url, thread_id),
        # The topic is an identifier the worker builds too (from RELAYLINE_PUBLIC_URL
        # alone): it does not move with the mount point, the token endpoint does.
        "tokenEndpoint": url_for("relayline.push.mercure_token", threadId=thread_id),
    }


#: where each push delivery tells the browser to listen (refused when not configured)
_PUSH_WHERE: Mapping[PushKind, Callable[[str], dict[str, str]]] = {
    "pusher": _pusher_where,
    "mercure": _mercure_where,
}


def push(job: TurnJob | ContinueJob, delivery: PushKind, send: Sender = _send) -> Response:
    where = _PUSH_WHERE[delivery](job.thread_id)
    sent = send(job.to(Target(delivery)))
    body: dict[str, object] = {
        "threadId": job.thread_id,
        "delivery": delivery,
        **where,
        "runId": job.run_id,
        "streamId": sent.segment_id,
        # where a consumer fills a gap in what it was pushed (web.segments)
        "envelopesUrl": url_for(
            "relayline.segments.envelopes", thread_id=job.thread_id, segment_id=sent.segment_id
        ),
    }
    if sent.queued is not None:
        body["queued"] = sent.queued
    response = jsonify(body)
    response.status_code = 202
    return response


def relay(
    job: TurnJob | ContinueJob,
    on_disconnect: DisconnectPolicy = "continue",
    send: Sender = _send,
) -> Response:
    svc = services()
    began = time.monotonic()
    # The worker writes the segment's log only; the relay reads that log from its start
    # (it is durable: nothing to subscribe to before the job leaves). The relay id stays
    # in the job's target for the logs; nothing publishes on it.
    sent = send(job.to(Target("relay", f"relay-{uuid.uuid4().hex}")))
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    dropped = _stopper(svc, job.thread_id, job.run_id) if on_disconnect == "cancel" else None
    preface = []
    # The segment's id: what a Vercel client sends as `activeStreamId` to stop it.
    headers = {**protocol(job.protocol).headers, **SSE_HEADERS, STREAM_ID_HEADER: sent.segment_id}
    if sent.queued is not None:
        headers["X-Relayline-Queued"] = str(sent.queued)
        if job.protocol == "native":  # the only vocabulary with room for it
            preface.append(encode_event(ProtocolEvent("queued", {"position": sent.queued})))
    # A turn sent at once waits for a worker (web.waiting); a queued one for its thread.
    times = WaitTimes.from_settings(svc.settings, heartbeat)
    waiting = WorkerWait(svc, job, sent.segment_id, times, began) if sent.queued is None else None
    body = _relayed(
        svc.logs,
        sent.segment_id,
        job.protocol,
        job.thread_id,
        job.seed,
        heartbeat=heartbeat,
        timeout=svc.settings.relay_timeout,
        on_dropped=dropped,
        preface=preface,
        began=began,
        direct=direct_socket(request.environ, svc.settings),
        waiting=waiting,
        budget=client_budget(request.environ, svc.settings),
    )
    return Response(body, headers=headers)


def _relayed(
    logs: LogMultiplexer,
    segment_id: str,
    protocol: ProtocolName,
    thread_id: str,
    seed: ClientSeed,
    *,
    heartbeat: float = HEARTBEAT_SECONDS,
    timeout: float = 300.0,
    on_dropped: Callable[[], None] | None = None,
    preface: Sequence[str] = (),
    began: float | None = None,
    direct: DirectSocket | None = None,
    waiting: WorkerWait | None = None,
    budget: ClientBudget | None = None,
) -> Iterator[str]:
    """The SSE body: the segment ``segment_id`` from its start to its terminal. A client
    that goes away closes this generator, which drops only its read of the log (the run
    goes on in the worker and its result lands in history), unless ``on_dropped`` is
    given: then it is called, to stop the run. ``direct``: the response's socket, which
    the log reader may write itself (web.direct). ``waiting``: the turn's wait for a
    worker (web.waiting), told before the segment's first event."""
    metrics.OPEN_STREAMS.inc()
    first = True

    def relayed(count: int) -> None:
        nonlocal first
        if first and began is not None:
            metrics.FIRST_EVENT_SECONDS.observe(time.monotonic() - began)
        first = False
        metrics.EVENTS_RELAYED.inc(count)

    try:
        yield from preface
        # The native cursor (`id:`) is what EventSource resends as Last-Event-ID.
        yield from log_frames(
            logs,
            segment_id,
            protocol,
            thread_id,
            seed,
            after=-1,
            heartbeat=heartbeat,
            timeout=timeout,
            ids=protocol == "native",
            on_frames=relayed,
            direct=direct,
            on_gone=on_dropped,  # a client found gone by the log reader's own write
            waiting=waiting,
            budget=budget,
        )
    except GeneratorExit:
        # A client dropped for not reading did not leave: its run goes on.
        if on_dropped is not None and not (budget is not None and budget.dropped):
            on_dropped()
        raise
    finally:
        metrics.OPEN_STREAMS.dec()


def log_frames(
    logs: LogMultiplexer,
    segment_id: str,
    protocol: ProtocolName,
    thread_id: str,
    seed: ClientSeed,
    *,
    after: int,
    heartbeat: float,
    timeout: float,
    ids: bool,
    started: bool = False,
    on_frames: Callable[[int], None] | None = None,
    direct: DirectSocket | None = None,
    on_gone: Callable[[], None] | None = None,
    waiting: WorkerWait | None = None,
    budget: ClientBudget | None = None,
) -> Iterator[str]:
    """The segment's log after ``after`` as SSE frames, spliced from the envelopes
    (channels.splice), joined per batch read; a heartbeat comment per ``heartbeat``
    seconds of silence; the terminal is not sent. A broken transport ends with the
    protocol's error frames (``started``: the client already saw the segment begin).
    ``ids`` puts ``id: <segment>:<sequence>`` before each frame (the native cursor,
    web.cursor). With
    ``direct`` (the response's socket, web.direct), the log reader writes the frames
    itself once the headers are out; a client it finds gone ends the body (and calls
    ``on_gone``). ``waiting``: the turn's wait for a worker, before the first event
    (web.waiting: a withdrawn turn ends the body with its own frames). ``budget``:
    what the client may leave unread before it is dropped (web.slow_clients); a
    dropped client's body just ends (it is not gone by its own choice: ``on_gone``
    is not called), and it resumes from its last event."""
    subscription = None
    cursor_of = segment_id if ids else None
    sink = direct.sink(ids=cursor_of, on_frames=on_frames) if direct is not None else None
    try:
        # Subscribed here, not by the caller: a body never iterated holds no read.
        subscription = logs.subscribe(
            segment_id,
            after=after,
            thread_id=thread_id,
            budget=budget.chars if budget is not None else None,
            on_overflow=budget.drop if budget is not None else None,
        )
        if waiting is not None:
            first = yield from waiting.until_taken(subscription)
            if first is None:
                return  # withdrawn: no worker took it in time
            started = started or waiting.sent_start
            frames = frames_of(first, cursor_of)
            if frames:
                started = True
                if on_frames is not None:
                    on_frames(len(frames))
                yield "".join(frames)
            if first and first[-1].type in TERMINALS:
                return
        for batch in subscription.batches(wait=heartbeat, timeout=timeout, sink=sink):
            if batch is None:
                yield SSE_HEARTBEAT
                continue
            frames = frames_of(batch, cursor_of)
            if frames:
                started = True
                if on_frames is not None:
                    on_frames(len(frames))
                text = "".join(frames)
                subscription.sending(len(text))  # unsent until the server asks for more
                yield text
                subscription.sending(0)
    except ClientGone:
        if budget is not None and budget.dropped:
            logger.info("dropped a client that stopped reading: thread %s", thread_id)
        elif on_gone is not None:
            on_gone()
    except ClientTooSlowError as exc:
        logger.info("dropped a client that stopped reading: thread %s: %s", thread_id, exc)
        if budget is None or not budget.can_drop:  # its socket is open: tell it to resume
            lost = StreamLostError(stream_lost(thread_id))
            for frame in failure_frames(protocol, thread_id, seed, lost, started=started):
                yield encode_event(frame)
    except (ChannelReadError, RedisError) as exc:
        started = started or (waiting is not None and waiting.sent_start)
        ended = delivery_error(exc, thread_id)
        frames = [
            encode_event(frame)
            for frame in failure_frames(protocol, thread_id, seed, ended, started=started)
        ]
        if ids and frames and isinstance(exc, SegmentReplacedError) and exc.newer is not None:
            # The cursor a client resumes from: the newer segment's start (web.cursor).
            frames[-1] = f"id: {frame_id(exc.newer, -1)}\n{frames[-1]}"
        yield from frames
    finally:
        if subscription is not None:
            subscription.close()


def _stopper(svc: Services, thread_id: str, run_id: str) -> Callable[[], None]:
    """Stop ``run_id`` when the client drops (``onDisconnect=cancel``), unless the thread
    has moved on to another run meanwhile."""

    def stop_dropped() -> None:
        try:
            current = svc.store.current_run(thread_id)
            if current is not None and current.run_id == run_id:
                stop(svc, thread_id)
        except Exception:  # the client is gone: nobody to tell but the log
            logger.exception("could not stop run %s", run_id)

    return stop_dropped


def delivery_error(exc: ChannelReadError | RedisError, thread_id: str) -> DeliveryError:
    """What a client is told when its stream breaks: the transport broke or the run was
    recovered elsewhere, never "The run failed." for a run that may still complete.
    Both codes tell the client to resume the thread's stream or reload."""
    if isinstance(exc, SegmentReplacedError):
        return RunElsewhereError(run_recovered(thread_id))
    return StreamLostError(stream_lost(thread_id))


#: every delivery by its ``?delivery=`` name (the names of RELAYLINE_DELIVERY)
DELIVERIES: Mapping[str, Callable[[TurnJob | ContinueJob, Sender, DisconnectPolicy], Response]] = {
    "relay": lambda job, send, policy: relay(job, policy, send),
    # A pushed stream has no connection to drop: the policy concerns relays only.
    "pusher": lambda job, send, _policy: push(job, "pusher", send),
    "mercure": lambda job, send, _policy: push(job, "mercure", send),
}
