"""Enqueue a validated turn or continuation and deliver its output: relayed as one SSE
response (SUBSCRIBE first, then enqueue by task name), or pushed (202 + where to listen).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from flask import Response, current_app, jsonify, request
from redis.exceptions import RedisError
from werkzeug.exceptions import BadRequest

from channels import ChannelReadError, RedisChannelReader, is_terminal
from channels.mercure import thread_topic
from channels.pusher import thread_channel
from shared.agent import Agent, Continuation
from shared.errors import RunInFlightError, WorkflowError
from shared.events import ProtocolEvent
from shared.messages import Message
from shared.protocols import failure_frames
from shared.sse import HEARTBEAT as SSE_HEARTBEAT
from shared.sse import encode_event
from shared.tools import FrontendTool
from web.services import services

#: seconds of silence between SSE comment heartbeats
HEARTBEAT_SECONDS = 15.0

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def json_body() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def refuse_if_busy(agent: Agent) -> None:
    """A new turn while a run holds the thread is a 409 before anything is enqueued."""
    record = agent.inspect()
    if record is not None and record.status in ("running", "suspended"):
        raise RunInFlightError(
            f"Cannot start a new turn on thread '{agent.thread_id}': run '{record.run_id}' "
            f"(attempt {record.attempt}) is {record.status}. Answer or wait for it first.",
            "run_in_flight",
        )


def turn_job(
    agent: Agent,
    agent_id: str,
    message: Message,
    frontend_tools: list[FrontendTool],
    protocol: str,
    seed: Mapping[str, Any],
) -> dict[str, Any]:
    if any(m.id == message.id for m in agent.history()):
        raise WorkflowError(
            f"Message '{message.id}' is already part of thread '{agent.thread_id}'.", "conflict"
        )
    return {
        "threadId": agent.thread_id,
        "agentId": agent_id,
        "owner": agent.owner,
        "runId": f"run_{uuid.uuid4().hex}",
        "message": {"id": message.id, "text": message.text},
        "frontendTools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "requiresApproval": t.requires_approval,
            }
            for t in frontend_tools
        ],
        "protocol": protocol,
        "seed": dict(seed),
    }


def continue_job(
    agent: Agent,
    agent_id: str,
    staged: Continuation,
    protocol: str,
    seed: Mapping[str, Any],
    stop_after_tool_call: bool = False,
) -> dict[str, Any]:
    return {
        "threadId": agent.thread_id,
        "agentId": agent_id,
        "owner": agent.owner,
        "runId": staged.run_id,
        "attempt": staged.attempt,
        "answers": staged.answers,
        "stopAfterToolCall": stop_after_tool_call,
        "protocol": protocol,
        "seed": dict(seed),
    }


def deliver(task: str, job: dict[str, Any], headers: Mapping[str, str]) -> Response:
    """Relay (one SSE response) or push (202 with where to listen), as the request's
    ``?delivery=`` or RELAYLINE_DELIVERY asks."""
    delivery = request.args.get("delivery") or services().settings.delivery
    if delivery == "relay":
        return relay(task, job, headers)
    if delivery in ("pusher", "mercure"):
        return push(task, job, delivery)
    raise BadRequest(f"Unknown delivery {delivery!r}; use relay, pusher or mercure.")


def push(task: str, job: dict[str, Any], delivery: str) -> Response:
    settings = services().settings
    thread_id = job["threadId"]
    if delivery == "pusher":
        if not (settings.pusher_app_id and settings.pusher_key and settings.pusher_secret):
            raise BadRequest("Pusher delivery is not configured on this server.")
        encrypted = settings.pusher_encryption_master_key_base64 is not None
        where = {
            "channel": thread_channel(thread_id, encrypted=encrypted),
            "key": settings.pusher_key,
            "authEndpoint": "/pusher/auth",
        }
    else:
        if not (settings.mercure_hub_url and settings.mercure_publisher_jwt_key):
            raise BadRequest("Mercure delivery is not configured on this server.")
        where = {
            "hubUrl": settings.mercure_hub_url,
            "topic": thread_topic(settings.public_url, thread_id),
            "tokenEndpoint": f"/mercure/token?threadId={thread_id}",
        }
    target = {"kind": delivery}
    services().celery.send_task(task, kwargs={"job": {**job, "target": target}})
    body = {"threadId": thread_id, "delivery": delivery, **where}
    if "runId" in job:
        body["runId"] = job["runId"]
    response = jsonify(body)
    response.status_code = 202
    return response


def relay(task: str, job: dict[str, Any], headers: Mapping[str, str]) -> Response:
    svc = services()
    name = f"relayline:relay:{uuid.uuid4().hex}"
    reader = RedisChannelReader(svc.redis, name, timeout=svc.settings.relay_timeout)
    reader.subscribe()  # before enqueuing: Pub/Sub keeps nothing for late listeners
    try:
        svc.celery.send_task(
            task, kwargs={"job": {**job, "target": {"kind": "relay", "channel": name}}}
        )
    except BaseException:
        reader.close()
        raise
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    body = _relayed(reader, job["protocol"], job["threadId"], job.get("seed", {}), heartbeat)
    return Response(body, headers={**headers, **SSE_HEADERS})


def _relayed(
    reader: RedisChannelReader,
    protocol: str,
    thread_id: str,
    seed: Mapping[str, Any],
    heartbeat: float = HEARTBEAT_SECONDS,
) -> Iterator[str]:
    """The SSE body. A client that goes away closes this generator, which drops only the
    subscription: the run goes on in the worker and its result lands in history."""
    started = False
    try:
        for item in reader.events(heartbeat=heartbeat):
            if not isinstance(item, ProtocolEvent):
                yield SSE_HEARTBEAT
                continue
            if is_terminal(item.type):
                return
            started = True
            yield encode_event(item)
    except (ChannelReadError, RedisError) as exc:
        for frame in failure_frames(protocol, thread_id, dict(seed), exc, started=started):
            yield encode_event(frame)
    finally:
        reader.close()
