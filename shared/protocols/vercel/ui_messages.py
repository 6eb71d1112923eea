"""A thread as the Vercel AI SDK's ``UIMessage[]`` (``GET /api/chat/<id>``).

One turn is one assistant UI message, as on the live stream: its id is the turn's
first stored assistant message id, each later inference is a new step (a
``step-start`` part between steps) and the outcomes of a batch fold into the tool
parts of the calls. A suspended run's open batch shows what the live client holds at
that point: calls awaiting a decision as ``approval-requested``, frontend calls
awaiting results as ``input-available``, results accepted so far as outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from relayline.shared import batch as batches
from relayline.shared.batch import request_from_record
from relayline.shared.interrupts import ApprovalRequest, InterruptRequest, ToolResultsRequest
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.persistence.store import RunRecord
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.vercel.adapter import part_id
from relayline.shared.protocols.vercel.wire import (
    ApprovalJSON,
    UIMessageJSON,
    UIPartJSON,
    UnfinishedCall,
)
from relayline.shared.records import Accepted, BatchJSON, CallJSON
from relayline.shared.tools import AnyTool, redacted_inputs

Part = UIPartJSON

#: what a call of a run that ended without settling its batch shows (never "running")
UNSETTLED_ERROR = StreamAdapter.error_message


class _Turn:
    """What the run record says about the open batch, if the run still owns one."""

    def __init__(self, run: RunRecord | None) -> None:
        batch = run.checkpoint.get("batch") if run is not None else None
        active = run is not None and run.status in ("running", "suspended")
        self.batch: BatchJSON | None = batch if active else None
        self.accepted: Accepted = run.accepted if run is not None else Accepted()
        self.request: InterruptRequest | None = (
            request_from_record(run) if run is not None else None
        )

    def call(self, message_id: str, call_id: str) -> CallJSON | None:
        if self.batch is None or self.batch.get("messageId") != message_id:
            return None
        return next((c for c in self.batch["calls"] if c["id"] == call_id), None)


def ui_messages(
    stored: Sequence[Message], run: RunRecord | None, *, tools: Iterable[AnyTool] = ()
) -> list[UIMessageJSON]:
    """Project stored messages and the thread's current run to ``UIMessage[]``.

    ``tools`` (the agent's tools) marks settled calls that needed approval and masks
    the arguments a tool redacts; give them whenever the output leaves the process.
    """
    known = {t.name: t for t in tools}
    results = {r.call_id: r for m in stored if m.role == "tool" for r in m.tool_results}
    turn = _Turn(run)
    out: list[UIMessageJSON] = []
    current: UIMessageJSON | None = None
    for message in stored:
        if message.role == "user":
            current = None
            out.append(
                {
                    "id": message.id,
                    "role": "user",
                    "parts": [{"type": "text", "text": message.text}],
                }
            )
        elif message.role == "assistant":
            parts = _step(message, results, turn, known)
            if current is None:
                current = {"id": message.id, "role": "assistant", "parts": parts}
                out.append(current)
            elif parts:  # the live stream opens a step only when the inference emits
                current["parts"] += [{"type": "step-start"}, *parts]
            unfinished = _unfinished(message, results, turn)
            if message.meta.get("stopped") is True or "stopped" in unfinished.values():
                current.setdefault("metadata", {})["stopped"] = True
            if unfinished:
                metadata = current.setdefault("metadata", {})
                metadata["unfinishedCalls"] = {**metadata.get("unfinishedCalls", {}), **unfinished}
    return out


def _unfinished(
    message: Message, results: Mapping[str, ToolResultPart], turn: _Turn
) -> dict[str, UnfinishedCall]:
    """The settled calls of ``message`` a person's stop or the run's end cut short."""
    unfinished: dict[str, UnfinishedCall] = {}
    for call in message.tool_calls:
        if turn.call(message.id, call.id) is not None:
            continue  # still open: the run may yet settle it
        result = results.get(call.id)
        if result is None:
            unfinished[call.id] = "interrupted"
        elif result.stopped:
            unfinished[call.id] = "stopped"
    return unfinished


def _step(
    message: Message,
    results: Mapping[str, ToolResultPart],
    turn: _Turn,
    known: Mapping[str, AnyTool],
) -> list[Part]:
    parts: list[Part] = []
    if message.reasoning:
        reasoning_id = part_id("reasoning", message.id, 0)
        parts.append(
            {"type": "reasoning", "id": reasoning_id, "text": message.reasoning, "state": "done"}
        )
    if message.text:
        parts.append({"type": "text", "text": message.text, "state": "done"})
    for call in message.tool_calls:
        open_call = turn.call(message.id, call.id)
        if open_call is not None:
            parts.append(_open_part(call, open_call, turn))
        else:
            parts.append(_settled_part(call, results.get(call.id), known.get(call.name)))
    return parts


def _base(call: ToolCallPart, redact: Iterable[str]) -> Part:
    return {
        "type": f"tool-{call.name}",
        "toolCallId": call.id,
        "state": "",
        "input": redacted_inputs(call.inputs, redact),
    }


def _settled_part(call: ToolCallPart, result: ToolResultPart | None, tool: AnyTool | None) -> Part:
    part = _base(call, tool.redact if tool is not None else ())
    if result is None:  # its run ended without settling the batch
        return {**part, "state": "output-error", "errorText": UNSETTLED_ERROR}
    rejected, reason = _rejected(result)
    if rejected:
        return {**part, "state": "output-denied", "approval": _approval(call.id, False, reason)}
    if result.stopped:
        # Never decided (or never run): no approval to claim, whatever the tool needs.
        return {**part, "state": "output-error", "errorText": result.content}
    if result.is_error:
        part.update({"state": "output-error", "errorText": result.content})
    else:
        part.update({"state": "output-available", "output": result.content})
    if tool is not None and tool.requires_approval:
        part["approval"] = _approval(call.id, True)
    return part


def _open_part(call: ToolCallPart, open_call: CallJSON, turn: _Turn) -> Part:
    part = _base(call, open_call.get("redact", ()))
    info = batches.call_info(open_call, turn.accepted, with_result=True)
    request = turn.request
    if info.approval == "pending":
        approval: ApprovalJSON = {"id": call.id}
        if isinstance(request, ApprovalRequest):
            approval["requestReason"] = request.message
        return {**part, "state": "approval-requested", "approval": approval}
    if info.approval == "rejected":
        # Not settled yet: the client holds its own answer until the batch completes.
        approval = _approval(call.id, False, info.reject_reason)
        return {**part, "state": "approval-responded", "approval": approval}
    entry = batches.results_of(turn.accepted).get(call.id)
    if entry is not None:
        if open_call["deferred"]:
            # The client's own answer, types kept: restating it must match what was accepted.
            if "error" in entry:
                part.update({"state": "output-error", "errorText": entry["error"]})
            else:
                part.update({"state": "output-available", "output": entry["result"]})
        elif info.is_error:
            part.update({"state": "output-error", "errorText": info.result or ""})
        else:
            part.update({"state": "output-available", "output": info.result or ""})
        if info.approval == "approved":
            part["approval"] = _approval(call.id, True)
        return part
    if isinstance(request, ToolResultsRequest) and call.id in request.pending_ids:
        return {**part, "state": "input-available"}
    if info.approval == "approved":
        return {**part, "state": "approval-responded", "approval": _approval(call.id, True)}
    return {**part, "state": "input-streaming"}  # previewed, not handed to anyone yet


def _approval(call_id: str, approved: bool, reason: str | None = None) -> ApprovalJSON:
    approval: ApprovalJSON = {"id": call_id, "approved": approved}
    if reason:
        approval["reason"] = reason
    return approval


def _rejected(result: ToolResultPart) -> tuple[bool, str | None]:
    """(rejected?, reason) of a settled result."""
    return result.rejected, result.reject_reason
