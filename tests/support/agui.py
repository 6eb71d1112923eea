"""AG-UI test helpers shared by the adapter, hydration and flow suites: ``checked`` streams
(SSE-encoded, run through ag-ui-validate with no errors or warnings, parsed with the
``ag_ui.core`` models allowing no unknown field but the documented ``error`` of
TOOL_CALL_RESULT), ``fold`` (a stream applied as the official ``@ag-ui/client`` 1.0
does) and the requests and agents built from them."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ag_ui.core import Event, ToolCallResultEvent
from ag_ui_validate.pytest_plugin import assert_valid_agui
from pydantic import BaseModel, TypeAdapter

from relayline.shared.agent import Agent, AgentSpec, tool
from relayline.shared.errors import RunFailedError
from relayline.shared.events import ProtocolEvent
from relayline.shared.messages import Message
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.providers import ScriptedProvider
from relayline.shared.sse import encode_event

Wire = list[dict[str, Any]]
#: messages as a helper reads them: the client's own (Wire) or the product's typed JSON
Held = Sequence[Mapping[str, Any]]

_EVENT: TypeAdapter[Any] = TypeAdapter(Event)
_ALLOWED_EXTRA = {(ToolCallResultEvent, "error")}  # kept in snapshots and reloads only


def checked(events: Iterable[ProtocolEvent]) -> Wire:
    """The JSON of one AG-UI stream as SSE carries it, after checking conformance."""
    wire: Wire = []
    for event in events:
        frame = encode_event(event)
        assert frame.startswith("data: ") and frame.endswith("\n\n")
        wire.append(json.loads(frame[len("data: ") : -2]))
    assert_valid_agui([json.dumps(item) for item in wire], max_warnings=0)
    for item in wire:
        _no_unknown_fields(_EVENT.validate_python(item))
    return wire


def _no_unknown_fields(value: Any) -> None:
    if isinstance(value, BaseModel):
        extra = {k for k in value.model_extra or {} if (type(value), k) not in _ALLOWED_EXTRA}
        assert not extra, f"{type(value).__name__} has fields AG-UI does not define: {extra}"
        for name in type(value).model_fields:
            _no_unknown_fields(getattr(value, name))
    elif isinstance(value, list):
        for item in value:
            _no_unknown_fields(item)


def collect(segment: Iterator[Any]) -> tuple[Wire, RunFailedError | None]:
    """Every frame of a segment, and the failure it raised after its error frames."""
    frames: list[ProtocolEvent] = []
    try:
        for frame in segment:
            frames.append(frame)
    except RunFailedError as exc:
        return checked(frames), exc
    return checked(frames), None


def stream(segment: Iterator[Any]) -> Wire:
    wire, failure = collect(segment)
    assert failure is None, failure
    return wire


def types(wire: Wire, *, steps: bool = False) -> list[str]:
    """Event types in order, runs of one type (content deltas) shown once."""
    kinds = [e["type"] for e in wire if steps or not e["type"].startswith("STEP_")]
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


def only(wire: Wire, kind: str) -> Wire:
    return [e for e in wire if e["type"] == kind]


def fold(messages: Held, wire: Wire) -> Wire:
    """The messages ``@ag-ui/client`` 1.0 holds after applying ``wire`` (the subset of
    its ``defaultApplyEvents`` this adapter exercises; it strips ``error``)."""
    out: Wire = [dict(m) for m in copy.deepcopy(messages)]

    def find(message_id: str | None) -> dict[str, Any] | None:
        return next((m for m in out if m["id"] == message_id), None)

    def owner(call_id: str) -> dict[str, Any] | None:
        return next(
            (m for m in out if any(c["id"] == call_id for c in m.get("toolCalls", []))), None
        )

    for event in wire:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            if find(event["messageId"]) is None:
                out.append({"id": event["messageId"], "role": event["role"], "content": ""})
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            message = find(event["messageId"])
            assert message is not None
            message["content"] = message.get("content", "") + event["delta"]
        elif kind == "TOOL_CALL_START" and owner(event["toolCallId"]) is None:
            parent = event.get("parentMessageId")
            holder = find(parent)
            if holder is None or holder["role"] != "assistant":
                new_id = parent if parent and holder is None else event["toolCallId"]
                holder = {"id": new_id, "role": "assistant", "toolCalls": []}
                out.append(holder)
            call = {"name": event["toolCallName"], "arguments": ""}
            holder.setdefault("toolCalls", []).append(
                {"id": event["toolCallId"], "type": "function", "function": call}
            )
        elif kind == "TOOL_CALL_ARGS":
            holder = owner(event["toolCallId"])
            assert holder is not None
            call = next(c for c in holder["toolCalls"] if c["id"] == event["toolCallId"])
            call["function"]["arguments"] += event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            result = {k: event[k] for k in ("toolCallId", "role", "content")}
            result = {"id": event["messageId"], **result}
            holder = owner(event["toolCallId"])
            at = len(out) if holder is None else out.index(holder) + 1
            while at < len(out) and out[at]["role"] == "tool":
                at += 1
            out.insert(at, result)
        elif kind == "ACTIVITY_SNAPSHOT":
            activity = {"id": event["messageId"], "role": "activity"}
            activity |= {"activityType": event["activityType"], "content": event["content"]}
            found = find(event["messageId"])
            if found is None:
                out.append(activity)
            else:
                out[out.index(found)] = activity
        elif kind == "MESSAGES_SNAPSHOT":
            snapshot = copy.deepcopy(event["messages"])
            by_id = {m["id"]: m for m in snapshot}
            kept = {r for r in ("activity", "reasoning") if all(m["role"] != r for m in snapshot)}
            out = [by_id.get(m["id"], m) for m in out if m["id"] in by_id or m["role"] in kept]
            out += [m for m in snapshot if m["id"] not in {o["id"] for o in out}]
    return out


def sent(messages: Held) -> Wire:
    """What the client puts in ``RunAgentInput.messages`` (it never sends activities)."""
    return [dict(m) for m in messages if m["role"] != "activity"]


def as_client_holds(messages: Held) -> Wire:
    """Reloaded messages as the client keeps them: it drops ``error`` from tool messages."""
    return [{k: v for k, v in m.items() if k != "error"} for m in messages]


def same_shape(messages: Held) -> Wire:
    """Client-folded messages without activities, assistant content always a string."""
    return [
        {**m, "content": m.get("content", "")} if m["role"] == "assistant" else dict(m)
        for m in messages
        if m["role"] != "activity"
    ]


def attach(agent: Agent, run_id: str, messages: Held = (), state: Any = None) -> list[AGUIAdapter]:
    """Give every segment a fresh adapter seeded like the client; returns the built ones."""
    built: list[AGUIAdapter] = []

    def factory() -> AGUIAdapter:
        built.append(AGUIAdapter(agent.thread_id, run_id, sent(list(messages)), state))
        return built[-1]

    agent.set_stream_adapter(factory)
    return built


def stream_with(agent: Agent, run_id: str, messages: Held, message: Message | str) -> Wire:
    attach(agent, run_id, messages)
    return stream(agent.stream(message))


def ask(agent: Agent, run_id: str, held: Held, text: str, message_id: str) -> tuple[Wire, Wire]:
    """A new turn as the client sends it: the stream, and what the client then holds."""
    held = [*held, user(text, message_id)]
    wire = stream_with(agent, run_id, held, Message.user(text, id=message_id))
    return wire, fold(held, wire)


def reply(agent: Agent, run_id: str, held: Held, **body: Any) -> tuple[Wire, Wire]:
    """A continuation on a fresh Agent (any process may take it), seeded like the client."""
    later = fresh(agent)
    attach(later, run_id, held)
    payload = {"messages": sent(held), **body}
    wire = stream(later.submit_inputs(payload, AGUIInputTranslator()).events())
    return wire, fold(held, wire)


def approve(*call_ids: str) -> Wire:
    return [
        {"interruptId": c, "status": "resolved", "payload": {"approved": True}} for c in call_ids
    ]


def tool_reply(call_id: str, content: str) -> dict[str, Any]:
    """The tool message a client appends after running a frontend call."""
    return {"id": f"tm-{call_id}", "role": "tool", "toolCallId": call_id, "content": content}


def fresh(agent: Agent) -> Agent:
    return Agent(agent.thread_id, agent.spec, agent.store)


def user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def scripted(*steps: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider({"chunk_size": 4, "rules": [{"match": "", "steps": list(steps)}]})


@tool(requires_approval=True)
def remove(path: str) -> str:
    """Remove a file."""
    return f"{path} removed"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def approval_spec() -> AgentSpec:
    """One response with reasoning, text and a call that needs approval."""
    call = {"id": "call_x", "name": "remove", "arguments": {"path": "a.txt"}}
    first = {"reasoning": "They want it gone.", "text": "Removing it.", "tool_calls": [call]}
    return AgentSpec(
        provider=scripted(first, {"text": "Done: {{last_tool_result}}"}), tools=[remove]
    )


CONFIRMATION: dict[str, Any] = {
    "id": "call_x",
    "reason": "confirmation",
    "message": "Approval required for: remove",
    "responseSchema": {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["approved"],
    },
    "metadata": {
        "id": "call_x",
        "name": "remove",
        "description": "Remove a file.",
        "decision": "pending",
        "feedback": None,
        "reason": None,
        "inputs": {"path": "a.txt"},
    },
}
