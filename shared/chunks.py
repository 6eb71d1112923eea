"""Native stream chunks the agent loop yields while a segment runs.

Payloads follow docs/reference/neuron-streaming-spec.md section 5.1: ``to_json`` is what the
native adapter sends.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

from relayline.shared.interrupts import Approval, InterruptRequest, ToolCallJSON
from relayline.shared.jsonutil import JSONObject


class ContentJSON(TypedDict):
    messageId: str
    content: str


class ToolArgumentJSON(TypedDict):
    messageId: str
    toolName: str
    toolCallId: str
    delta: str


class ToolEventJSON(TypedDict):
    """A proposed or settled call: the assistant message holding it and the call."""

    messageId: str | None
    tool: ToolCallJSON


@dataclasses.dataclass(frozen=True)
class TextChunk:
    message_id: str
    content: str

    def to_json(self) -> ContentJSON:
        return {"messageId": self.message_id, "content": self.content}


@dataclasses.dataclass(frozen=True)
class ReasoningChunk:
    message_id: str
    content: str

    def to_json(self) -> ContentJSON:
        return {"messageId": self.message_id, "content": self.content}


@dataclasses.dataclass(frozen=True)
class ToolArgumentChunk:
    """A raw fragment of a call's JSON arguments, as the model streams it."""

    message_id: str
    tool_name: str
    tool_call_id: str
    delta: str

    def to_json(self) -> ToolArgumentJSON:
        return {
            "messageId": self.message_id,
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
            "delta": self.delta,
        }


@dataclasses.dataclass(frozen=True)
class ToolCallInfo:
    """The ToolCall JSON of docs/reference/neuron-streaming-spec.md section 5.1."""

    call_id: str
    name: str
    inputs: JSONObject
    description: str | None = None
    deferred: bool = False
    result: str | None = None
    is_error: bool = False
    approval: Approval | None = None
    approval_reason: str | None = None
    reject_reason: str | None = None

    def to_json(self) -> ToolCallJSON:
        result: Any = self.result
        if self.is_error and self.result is not None:
            result = {"error": self.result}
        return {
            "callId": self.call_id,
            "name": self.name,
            "description": self.description,
            "deferred": self.deferred,
            "inputs": self.inputs,
            "result": result,
            "approval": self.approval,
            "approvalReason": self.approval_reason,
            "rejectReason": self.reject_reason,
        }


@dataclasses.dataclass(frozen=True)
class ToolCallChunk:
    """A call the model proposed; ``message_id`` is the assistant message holding it.
    Frontend calls are handed to the browser only at ``interrupt(ToolResultsRequest)``."""

    message_id: str
    tool: ToolCallInfo

    def to_json(self) -> ToolEventJSON:
        return {"messageId": self.message_id, "tool": self.tool.to_json()}


@dataclasses.dataclass(frozen=True)
class ToolResultChunk:
    """A settled call. ``message_id`` is the stored assistant message holding the call
    (adapters use it as the parent); the native payload keeps ``messageId: null``."""

    tool: ToolCallInfo
    message_id: str | None = None

    def to_json(self) -> ToolEventJSON:
        return {"messageId": None, "tool": self.tool.to_json()}


@dataclasses.dataclass(frozen=True)
class InterruptEvent:
    """Given to pull consumers without an adapter when a segment suspends."""

    request: InterruptRequest


Chunk = TextChunk | ReasoningChunk | ToolArgumentChunk | ToolCallChunk | ToolResultChunk
