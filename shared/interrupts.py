"""What a suspended run waits for, in the public JSON of
docs/reference/neuron-streaming-spec.md section 6.1.

``ToolResultsRequest`` waits for frontend tool results; ``ApprovalRequest`` waits for
a person's decisions. Both are rebuilt from the persisted run, never from a client.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict, TypeVar

from relayline.shared.errors import InputTranslationError, WorkflowError
from relayline.shared.jsonutil import JSONObject, dumps

Approval = Literal["pending", "approved", "rejected"]


class ToolCallJSON(TypedDict):
    """The ToolCall JSON of docs/reference/neuron-streaming-spec.md section 5.1 (native stream,
    interrupts)."""

    callId: str
    name: str
    description: str | None
    deferred: bool
    inputs: JSONObject
    #: the result text, ``{"error": text}`` for a failed call, or None while unsettled
    result: Any
    approval: Approval | None
    approvalReason: str | None
    rejectReason: str | None


class ActionJSON(TypedDict):
    """One action of an approval request's JSON
    (docs/reference/neuron-streaming-spec.md section 6.1)."""

    id: str
    name: str
    description: str | None
    decision: str | None
    feedback: str | None
    reason: str | None
    inputs: JSONObject


class ResultEntry(TypedDict, total=False):
    """A settled frontend call: ``result`` (any JSON) or ``error`` (text), never both."""

    result: Any
    error: str
    #: a person's stop settled the call before it finished (``error`` is what the model
    #: reads); only relayline sets it, a client's entry holds one key
    stopped: bool


#: a person's decision on a call: "approve", "reject" or ["reject", "<reason>"]
Decision = str | list[str]
#: what a continuation answers, by call id: result entries for a frontend wait,
#: decisions for an approval
Answer = ResultEntry | Decision
Answers = dict[str, Answer]

_A = TypeVar("_A", ResultEntry, Decision)


class InterruptJSON(TypedDict):
    """The public JSON of a wait (docs/reference/neuron-streaming-spec.md section 6.1), as a
    suspended run stores it."""

    interruptId: int
    type: str
    eventName: str
    expiresAt: str | None
    message: str
    toolCalls: NotRequired[list[ToolCallJSON]]
    actions: NotRequired[list[ActionJSON]]


TIMEOUT_ERROR = "External tool execution timed out."
CANCELLED_ERROR = "Frontend tool execution cancelled."


@dataclasses.dataclass(frozen=True)
class PendingCall:
    """A call named by an interrupt: id, tool name, description, arguments."""

    id: str
    name: str
    inputs: JSONObject
    description: str | None = None
    deferred: bool = True
    #: the stored assistant message holding the call (not part of the public JSON)
    parent_message_id: str | None = None

    def tool_call_json(self, approval: Approval | None = None) -> ToolCallJSON:
        """The ToolCall JSON of docs/reference/neuron-streaming-spec.md section 5.1."""
        return {
            "callId": self.id,
            "name": self.name,
            "description": self.description,
            "deferred": self.deferred,
            "inputs": self.inputs,
            "result": None,
            "approval": approval,
            "approvalReason": None,
            "rejectReason": None,
        }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec="seconds")


def _new_answers(
    answers: Mapping[str, Any],
    pending: Sequence[str],
    settled: Mapping[str, _A],
    valid: Callable[[Any], bool],
    texts: tuple[str, str, str],
) -> dict[str, _A]:
    """The answers that are new. Raises WorkflowError for a foreign id or a different
    outcome for a settled call, InputTranslationError (400, ``MALFORMED_ANSWER``) for an
    answer of the wrong shape; identical restatements pass.
    ``texts`` are the three messages, each formatted with the call id."""
    foreign, malformed, conflict = texts
    new: dict[str, _A] = {}
    for call_id, entry in answers.items():
        if call_id not in pending and call_id not in settled:
            raise WorkflowError(foreign.format(call_id))
        if not valid(entry):
            raise InputTranslationError(malformed.format(call_id), code="MALFORMED_ANSWER")
        if call_id not in settled:
            new[call_id] = entry
        elif dumps(settled[call_id]) != dumps(entry):
            raise WorkflowError(conflict.format(call_id))
    return new


class _Wait:
    """What both requests share: an id, a deadline and the head of their JSON."""

    interrupt_id: int
    expires_at: datetime | None
    message: str
    event_name: str

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or datetime.now(UTC))

    def _json_head(self) -> InterruptJSON:
        return {
            "interruptId": self.interrupt_id,
            "type": "wait_for_event",
            "eventName": self.event_name,
            "expiresAt": _iso(self.expires_at),
            "message": self.message,
        }


@dataclasses.dataclass(frozen=True)
class ToolResultsRequest(_Wait):
    """Waiting for the results of frontend calls. ``accepted`` holds earlier partial results."""

    interrupt_id: int
    tool_calls: tuple[PendingCall, ...]
    accepted: Mapping[str, ResultEntry] = dataclasses.field(default_factory=dict)
    expires_at: datetime | None = None
    message: str = "Waiting for external tool results"

    kind = "tool_results"
    event_name = "tool_results"

    @property
    def pending_ids(self) -> list[str]:
        return [c.id for c in self.tool_calls]

    @property
    def candidate_ids(self) -> set[str]:
        return set(self.pending_ids) | set(self.accepted)

    def to_json(self) -> InterruptJSON:
        return {**self._json_head(), "toolCalls": [c.tool_call_json() for c in self.tool_calls]}

    def validate_results(self, results: Mapping[str, Any]) -> dict[str, ResultEntry]:
        """Check a native result map; returns only the entries that are new."""
        return _new_answers(results, self.pending_ids, self.accepted, _valid_result_entry, (
            "Tool result '{}' does not belong to this deferred batch.",
            "Tool result '{}' must contain either 'result' or a string 'error'.",
            "Tool result '{}' has already been settled with a different outcome.",
        ))  # fmt: skip


def _valid_result_entry(entry: Any) -> bool:
    if not isinstance(entry, dict) or len(entry) != 1:
        return False
    if "result" in entry:
        return True
    return "error" in entry and isinstance(entry["error"], str)


@dataclasses.dataclass(frozen=True)
class ApprovalRequest(_Wait):
    """Waiting for a person to approve or reject calls. Action ids are call ids."""

    interrupt_id: int
    actions: tuple[PendingCall, ...]
    decided: Mapping[str, Decision] = dataclasses.field(default_factory=dict)
    message: str = "Approval required"
    expires_at: datetime | None = None

    kind = "approval"
    event_name = "approval"

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for action in self.actions:
            if action.id in seen:
                raise WorkflowError(
                    f'Duplicate approval action id "{action.id}": '
                    "each action must be a distinct tool call.",
                )
            seen.add(action.id)

    @property
    def pending_ids(self) -> list[str]:
        return [a.id for a in self.actions]

    @property
    def candidate_ids(self) -> set[str]:
        return set(self.pending_ids) | set(self.decided)

    def to_json(self) -> InterruptJSON:
        actions: list[ActionJSON] = [
            {
                "id": a.id,
                "name": a.name,
                "description": a.description,
                "decision": None,
                "feedback": None,
                "reason": None,
                "inputs": a.inputs,
            }
            for a in self.actions
        ]
        return {**self._json_head(), "actions": actions}

    def validate_decisions(self, decisions: Mapping[str, Any]) -> dict[str, Decision]:
        """Check a native decision map; returns only the entries that are new."""
        return _new_answers(decisions, self.pending_ids, self.decided, valid_decision, (
            "Approval decision '{}' does not belong to this approval request.",
            'Approval decision \'{}\' must be "approve", "reject" or ["reject", "<reason>"].',
            "Tool call '{}' has already been decided with a different outcome.",
        ))  # fmt: skip


def valid_decision(decision: Any) -> bool:
    if decision in ("approve", "reject"):
        return True
    return (
        isinstance(decision, list)
        and len(decision) == 2
        and decision[0] == "reject"
        and isinstance(decision[1], str)
    )


InterruptRequest = ToolResultsRequest | ApprovalRequest
