"""AG-UI wire shapes shared by the live stream and the reload: message and interrupt
JSON (camelCase, as the ``ag_ui.core`` models dump them) and the derived ids.

Every published id is a stored message id or derived from one (``reasoning_<id>``,
``result_<callId>``), so the stream and a reload name the same things alike."""

from __future__ import annotations

import copy
from typing import Any, Final, Literal, NotRequired, TypedDict

from relayline.shared.interrupts import ApprovalRequest, InterruptRequest
from relayline.shared.jsonutil import JSONObject

Role = Literal["user", "assistant", "system", "developer", "tool", "reasoning"]


class FunctionCallJSON(TypedDict):
    name: str
    arguments: str  # JSON text


class ToolCallJSON(TypedDict):
    """A ``toolCalls`` entry of an assistant message."""

    id: str
    type: Literal["function"]
    function: FunctionCallJSON


class MessageJSON(TypedDict):
    """One AG-UI message; which optional keys are set depends on ``role``."""

    id: str
    role: Role
    content: NotRequired[str | None]
    toolCalls: NotRequired[list[ToolCallJSON]]
    toolCallId: NotRequired[str]
    error: NotRequired[str]


class InterruptJSON(TypedDict):
    """One entry of a run outcome's (or a reload's) ``interrupts``."""

    id: str
    reason: str
    message: str
    metadata: JSONObject
    responseSchema: NotRequired[JSONObject]
    expiresAt: NotRequired[str]


class Hydrated(TypedDict):
    """What a reloading client needs: its ``initialMessages`` and ``pendingInterrupts``."""

    messages: list[MessageJSON]
    interrupts: list[InterruptJSON]


#: the answer a ``confirmation`` interrupt expects (resumed as ``{approved, reason?}``)
CONFIRMATION_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


def reasoning_id(message_id: str) -> str:
    return f"reasoning_{message_id}"


def result_id(call_id: str) -> str:
    return f"result_{call_id}"


def tool_call_json(call_id: str, name: str, arguments: str) -> ToolCallJSON:
    """A ``toolCalls`` entry of an assistant message; ``arguments`` is JSON text."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_message_json(call_id: str, content: str, is_error: bool) -> MessageJSON:
    """The tool message a result becomes; an error keeps its text in both fields."""
    message: MessageJSON = {
        "id": result_id(call_id),
        "role": "tool",
        "toolCallId": call_id,
        "content": content,
    }
    if is_error:
        message["error"] = content
    return message


#: an interrupt's public ``reason`` by the request's internal type (the reference design
#: sends ``neuron:<type>``, a name of its own internals); documented, stable
PUBLIC_REASONS: Final = {"wait_for_event": "tool_results"}
#: the ``reason`` of each approval action
CONFIRMATION: Final = "confirmation"


def interrupts_json(request: InterruptRequest) -> list[InterruptJSON]:
    """The AG-UI interrupts of ``request``: one ``confirmation`` per approval action,
    else one ``tool_results`` interrupt named by the request id (what a reload of a
    frontend wait shows; live, a frontend wait is a plain handoff and has no interrupt)."""
    data = request.to_json()
    expires_at = data.get("expiresAt")
    found: list[InterruptJSON] = []
    if isinstance(request, ApprovalRequest):
        for action in data.get("actions", ()):
            entry: InterruptJSON = {
                "id": action["id"],
                "reason": CONFIRMATION,
                # PendingCall carries no per-action reason, so the request's message
                "message": action["reason"] or request.message,
                "responseSchema": copy.deepcopy(CONFIRMATION_SCHEMA),
                "metadata": {**action, "decision": "pending"},
            }
            found.append(entry)
    else:
        found.append(
            {
                "id": str(request.interrupt_id),
                "reason": PUBLIC_REASONS.get(data["type"], data["type"]),
                "message": request.message,
                "metadata": dict[str, Any](data),
            }
        )
    if expires_at:
        for entry in found:
            entry["expiresAt"] = expires_at
    return found
