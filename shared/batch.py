"""The open tool batch of a run: which calls wait for a decision or a result, the
interrupt that names them, and the tool message once every call is settled.

A batch lives in the run's checkpoint as JSON; decisions and results accumulate in
the run's ``accepted`` map by call id. Everything here is a pure function of the
record, so the protocols read a run's interrupt without importing the agent loop.
"""

from __future__ import annotations

from datetime import datetime

from relayline.shared.chunks import ToolCallInfo
from relayline.shared.interrupts import (
    Approval,
    ApprovalRequest,
    InterruptRequest,
    PendingCall,
    ToolResultsRequest,
)
from relayline.shared.jsonutil import normalize_result
from relayline.shared.messages import Message, ToolResultPart
from relayline.shared.persistence.store import RunRecord
from relayline.shared.records import Accepted, BatchJSON, CallJSON, Decision, ResultEntry, RunStart
from relayline.shared.texts import CALL_STOPPED
from relayline.shared.tools import FrontendTool, redacted_inputs


def request_from_record(record: RunRecord) -> InterruptRequest | None:
    """The interrupt a suspended run waits on, rebuilt from what persistence holds."""
    batch = record.checkpoint.get("batch")
    if record.status != "suspended" or record.interrupt is None or batch is None:
        return None
    interrupt_id = int(record.interrupt["interruptId"])
    return request_for(record.interrupt["eventName"], interrupt_id, batch, record.accepted)


def request_for(
    event_name: str, interrupt_id: int, batch: BatchJSON, accepted: Accepted
) -> InterruptRequest:
    """The request a wait of ``event_name`` on ``batch`` stands for."""
    if event_name == ApprovalRequest.event_name:
        return approval_request(interrupt_id, batch, accepted)
    expires = batch.get("waitExpiresAt")
    return results_request(
        interrupt_id, batch, accepted, datetime.fromisoformat(expires) if expires else None
    )


def dynamic_tools(start: RunStart) -> list[FrontendTool]:
    """Frontend tools a client declared for this run (AG-UI catalogs), kept with the run."""
    return [FrontendTool.from_json(t) for t in start.get("frontendTools", ())]


def decisions_of(accepted: Accepted) -> dict[str, Decision]:
    return dict(accepted.get("decisions", {}))


def results_of(accepted: Accepted) -> dict[str, ResultEntry]:
    return dict(accepted.get("results", {}))


def rejection(decision: Decision | None) -> tuple[bool, str | None]:
    """(rejected?, reason) of one native decision."""
    if decision == "reject":
        return True, None
    if isinstance(decision, list) and decision and decision[0] == "reject":
        return True, decision[1]
    return False, None


def rejection_text(name: str, reason: str | None) -> str:
    # The model reads this as an instruction; clients and tests match its substrings.
    text = f"TOOL NOT EXECUTED: the user rejected the call to '{name}'."
    if reason:
        text += f" Reason: {reason}"
    return text + " Do not retry this call unless the user asks for it."


def _pending(call: CallJSON, batch: BatchJSON) -> PendingCall:
    return PendingCall(
        id=call["id"],
        name=call["name"],
        inputs=redacted_inputs(call["inputs"], call.get("redact", ())),
        description=call.get("description"),
        deferred=call["deferred"],
        parent_message_id=batch["messageId"],
    )


def undecided(batch: BatchJSON, accepted: Accepted) -> list[CallJSON]:
    decisions = decisions_of(accepted)
    return [c for c in batch["calls"] if c["approval"] and c["id"] not in decisions]


def is_rejected(call: CallJSON, accepted: Accepted) -> bool:
    return rejection(decisions_of(accepted).get(call["id"]))[0]


def unexecuted_backend(batch: BatchJSON, accepted: Accepted) -> list[CallJSON]:
    results = results_of(accepted)
    return [
        c
        for c in batch["calls"]
        if not c["deferred"] and c["id"] not in results and not is_rejected(c, accepted)
    ]


def pending_frontend(batch: BatchJSON, accepted: Accepted) -> list[CallJSON]:
    results = results_of(accepted)
    return [
        c
        for c in batch["calls"]
        if c["deferred"] and c["id"] not in results and not is_rejected(c, accepted)
    ]


def approval_request(interrupt_id: int, batch: BatchJSON, accepted: Accepted) -> ApprovalRequest:
    gated = {c["id"] for c in batch["calls"] if c["approval"]}
    decided = {k: v for k, v in decisions_of(accepted).items() if k in gated}
    actions = tuple(_pending(c, batch) for c in undecided(batch, accepted))
    names = ", ".join(a.name for a in actions)
    return ApprovalRequest(
        interrupt_id=interrupt_id,
        actions=actions,
        decided=decided,
        message=f"Approval required for: {names}",
    )


def results_request(
    interrupt_id: int,
    batch: BatchJSON,
    accepted: Accepted,
    expires_at: datetime | None,
) -> ToolResultsRequest:
    deferred = {c["id"] for c in batch["calls"] if c["deferred"]}
    return ToolResultsRequest(
        interrupt_id=interrupt_id,
        tool_calls=tuple(_pending(c, batch) for c in pending_frontend(batch, accepted)),
        accepted={k: v for k, v in results_of(accepted).items() if k in deferred},
        expires_at=expires_at,
    )


def settled_text(entry: ResultEntry) -> tuple[str, bool]:
    """(text the model sees, is error) of one stored result entry."""
    if "error" in entry:
        return str(entry["error"]), True
    return normalize_result(entry["result"]), False


def call_info(call: CallJSON, accepted: Accepted, *, with_result: bool) -> ToolCallInfo:
    """The ToolCallJSON JSON of a call as it stands, arguments redacted where declared."""
    decision = decisions_of(accepted).get(call["id"])
    rejected, reason = rejection(decision)
    approval: Approval | None = None
    if call["approval"]:
        approval = "pending" if decision is None else ("rejected" if rejected else "approved")
    result: str | None = None
    is_error = False
    entry = results_of(accepted).get(call["id"])
    if with_result and rejected:
        result = rejection_text(call["name"], reason)
    elif with_result and entry is not None:
        result, is_error = settled_text(entry)
    return ToolCallInfo(
        call_id=call["id"],
        name=call["name"],
        inputs=redacted_inputs(call["inputs"], call.get("redact", ())),
        description=call.get("description"),
        deferred=call["deferred"],
        result=result,
        is_error=is_error,
        approval=approval,
        reject_reason=reason if rejected else None,
    )


def stopped(batch: BatchJSON, accepted: Accepted) -> Accepted:
    """``accepted`` with every call of the batch that has no outcome yet (undecided,
    awaiting the browser, or never executed) settled as stopped, so ``tool_message``
    can close the batch and the model sees why on the next turn."""
    results = results_of(accepted)
    for call in batch["calls"]:
        if call["id"] not in results and not is_rejected(call, accepted):
            results[call["id"]] = {"error": CALL_STOPPED, "stopped": True}
    return {**accepted, "results": results}


def tool_message(batch: BatchJSON, accepted: Accepted) -> Message:
    """One tool message holding every call's outcome, in the batch's order."""
    results = results_of(accepted)
    parts = []
    for call in batch["calls"]:
        rejected, reason = rejection(decisions_of(accepted).get(call["id"]))
        if rejected:
            text = rejection_text(call["name"], reason)
            parts.append(
                ToolResultPart(call["id"], call["name"], text, rejected=True, reject_reason=reason)
            )
            continue
        entry = results[call["id"]]
        text, is_error = settled_text(entry)
        stopped = entry.get("stopped") is True
        parts.append(ToolResultPart(call["id"], call["name"], text, is_error, stopped=stopped))
    return Message(id=batch["resultMessageId"], role="tool", tool_results=tuple(parts))
