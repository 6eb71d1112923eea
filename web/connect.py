"""AG-UI connect: ``POST /agent/<agentId>/connect`` and ``POST /agui/connect``, what
CopilotKit's runtime serves and its client calls on page load (a ``RunAgentInput``
naming the thread; docs/reference/resume-and-cancel.md section 3).

The answer rebuilds the whole thread: one run that carries the stored history as a
``MESSAGES_SNAPSHOT`` (ending with the interrupt outcome when the run waits on one),
then, when an AG-UI segment is running, that segment replayed from its ``RUN_STARTED``
and followed live to its end. Nothing runs and nothing is stored: an unknown thread gets
an empty 200 stream, someone else's a 404.

No message is sent twice: the history is read first, then the segment's log so far,
and every message the log already names is left out of the snapshot (the replay brings
it); a message stored after the history was read has its events after that point of
the log, so the replay brings it too.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Sequence

from flask import Blueprint, Response, current_app, request

from relayline.channels.envelope import REPLACED, Envelope
from relayline.channels.stream.log import active_segment, entries
from relayline.shared.events import ProtocolEvent
from relayline.shared.jobs import DEFAULT_AGENT
from relayline.shared.protocols import protocol
from relayline.shared.protocols.agui.wire import MessageJSON
from relayline.shared.sse import HEARTBEAT as SSE_HEARTBEAT
from relayline.shared.sse import encode_event
from relayline.shared.tools import redactions
from relayline.web.agui import agent_spec, agui_thread_payload
from relayline.web.auth import check_thread_id, current_user, thread_for
from relayline.web.bounds import json_body
from relayline.web.direct import direct_socket
from relayline.web.dispatch import HEARTBEAT_SECONDS, SSE_HEADERS, log_frames
from relayline.web.services import services
from relayline.web.slow_clients import client_budget

bp = Blueprint("connect", __name__)

#: the most stored messages a connect snapshot carries (the newest ones)
SNAPSHOT_LIMIT = 500


@bp.post("/agui/connect")
def connect_default() -> Response:
    return connect(DEFAULT_AGENT)


@bp.post("/agent/<agent_id>/connect")
def connect(agent_id: str) -> Response:
    svc = services()
    spec = agent_spec(agent_id)
    thread_id = check_thread_id(json_body().get("threadId"))
    headers = {**protocol("agui").headers, **SSE_HEADERS}
    if thread_for(thread_id, current_user()) is None:
        return Response("", headers=headers)  # nothing to connect to yet
    segment = active_segment(svc.redis, thread_id)
    live = segment if segment is not None and segment.protocol == "agui" else None
    stored = agui_thread_payload(
        svc.store, thread_id, SNAPSHOT_LIMIT, redact=redactions(spec.tools)
    )
    backlog = [Envelope.parse(e) for e in entries(svc.redis, live.segment_id)] if live else []
    # Up to a takeover's notice, which the live read meets next and answers as a relay does.
    backlog = list(itertools.takewhile(lambda e: e.type != REPLACED, backlog))
    named = _message_ids([e.to_event() for e in backlog])
    messages = [m for m in stored["messages"] if m.get("id") not in named]
    snapshot = _snapshot_run(thread_id, messages, stored["interrupts"] if live is None else [])
    heartbeat = float(current_app.config.get("RELAYLINE_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS))
    frames = None
    if live is not None:
        frames = log_frames(
            svc.logs,
            live.segment_id,
            "agui",
            thread_id,
            {},
            after=backlog[-1].sequence if backlog else -1,
            heartbeat=heartbeat,
            timeout=svc.settings.relay_timeout,
            ids=False,
            started=bool(backlog),
            direct=direct_socket(request.environ, svc.settings),
            budget=client_budget(request.environ, svc.settings),
        )
    return Response(_body(snapshot, backlog, frames), headers=headers)


def _snapshot_run(
    thread_id: str, messages: list[MessageJSON], interrupts: Sequence[object]
) -> list[ProtocolEvent]:
    run_id = f"connect_{uuid.uuid4().hex}"
    finished: dict[str, object] = {"threadId": thread_id, "runId": run_id}
    if interrupts:
        finished["outcome"] = {"type": "interrupt", "interrupts": list(interrupts)}
    return [
        ProtocolEvent("RUN_STARTED", {"threadId": thread_id, "runId": run_id}),
        ProtocolEvent("MESSAGES_SNAPSHOT", {"messages": messages}),
        ProtocolEvent("RUN_FINISHED", finished),
    ]


def _message_ids(events: Sequence[ProtocolEvent]) -> set[str]:
    """Every message id the segment's events name (its own messages and their parents)."""
    ids: set[str] = set()
    for event in events:
        for key in ("messageId", "parentMessageId"):
            value = event.data.get(key)
            if isinstance(value, str):
                ids.add(value)
        if event.type == "MESSAGES_SNAPSHOT":
            for message in event.data.get("messages", ()):
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    ids.add(message["id"])
    return ids


def _body(
    snapshot: list[ProtocolEvent], backlog: list[Envelope], live: Iterator[str] | None
) -> Iterator[str]:
    for event in snapshot:
        yield encode_event(event)
    ended = False
    for envelope in backlog:
        if envelope.is_terminal:
            ended = True
            break
        yield encode_event(envelope.to_event())
    if live is not None and not ended:
        yield SSE_HEARTBEAT
        yield from live
