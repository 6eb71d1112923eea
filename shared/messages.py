"""Chat messages with stable ids, as stored and as shown to the model.

A message is a role plus content parts. Assistant messages may carry the tool calls
the model proposed; a ``tool`` message carries the results of one whole batch, in
the batch's order. Ids are minted once and never change: adapters derive their wire
ids from them, so a reload shows the same ids as the live stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, cast

from relayline.shared.ids import new_id as new_id  # re-exported: it lived here
from relayline.shared.jsonutil import JSONObject

Role = Literal["system", "user", "assistant", "tool"]


class ToolCallJSON(TypedDict):
    id: str
    name: str
    inputs: JSONObject


class ToolResultJSON(TypedDict):
    callId: str
    name: str
    content: str
    isError: NotRequired[bool]
    rejected: NotRequired[bool]
    rejectReason: NotRequired[str | None]
    stopped: NotRequired[bool]


class TextBlock(TypedDict):
    type: Literal["text", "reasoning"]
    text: str


class ToolCallBlock(ToolCallJSON):
    type: Literal["tool_call"]


class ToolResultBlock(ToolResultJSON):
    type: Literal["tool_result"]


#: one block of ``messages.content`` as stored
ContentBlock = TextBlock | ToolCallBlock | ToolResultBlock


@dataclasses.dataclass(frozen=True)
class ToolCallPart:
    """One call the model proposed: the call id is its only identity."""

    id: str
    name: str
    inputs: JSONObject

    def to_json(self) -> ToolCallJSON:
        return {"id": self.id, "name": self.name, "inputs": self.inputs}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCallPart:
        return cls(id=data["id"], name=data["name"], inputs=dict(data.get("inputs") or {}))


@dataclasses.dataclass(frozen=True)
class ToolResultPart:
    """The settled outcome of one call: text the model sees, flagged when an error."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    #: a person rejected the call: ``content`` is the instruction the model reads
    rejected: bool = False
    reject_reason: str | None = None
    #: a person's stop settled the call before it finished: ``content`` tells the model
    stopped: bool = False

    def to_json(self) -> ToolResultJSON:
        data: ToolResultJSON = {"callId": self.call_id, "name": self.name, "content": self.content}
        if self.is_error:
            data["isError"] = True
        if self.rejected:
            data["rejected"] = True
            data["rejectReason"] = self.reject_reason
        if self.stopped:
            data["stopped"] = True
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolResultPart:
        return cls(
            call_id=data["callId"],
            name=data["name"],
            content=data["content"],
            is_error=bool(data.get("isError", False)),
            rejected=bool(data.get("rejected", False)),
            reject_reason=data.get("rejectReason"),
            stopped=bool(data.get("stopped", False)),
        )


@dataclasses.dataclass(frozen=True)
class Message:
    id: str
    role: Role
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    tool_results: tuple[ToolResultPart, ...] = ()
    #: provider details kept with the message (usage, finish reason): free-form
    meta: JSONObject = dataclasses.field(default_factory=dict)

    @classmethod
    def user(cls, text: str, id: str | None = None) -> Message:
        return cls(id=id or new_id("msg"), role="user", text=text)

    def content_json(self) -> list[ContentBlock]:
        """Content blocks as stored in ``messages.content``."""
        blocks: list[ContentBlock] = []
        if self.reasoning:
            blocks.append({"type": "reasoning", "text": self.reasoning})
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        blocks.extend(ToolCallBlock(type="tool_call", **c.to_json()) for c in self.tool_calls)
        blocks.extend(
            cast(ToolResultBlock, {"type": "tool_result", **r.to_json()}) for r in self.tool_results
        )
        return blocks

    @classmethod
    def from_stored(
        cls, id: str, role: str, content: Sequence[Mapping[str, Any]], meta: JSONObject | None
    ) -> Message:
        text = "".join(b["text"] for b in content if b["type"] == "text")
        reasoning = "".join(b["text"] for b in content if b["type"] == "reasoning")
        calls = tuple(ToolCallPart.from_json(b) for b in content if b["type"] == "tool_call")
        results = tuple(ToolResultPart.from_json(b) for b in content if b["type"] == "tool_result")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"Unknown stored message role {role!r}.")
        return cls(
            id=id,
            role=role,  # type: ignore[arg-type]
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            tool_results=results,
            meta=dict(meta or {}),
        )
