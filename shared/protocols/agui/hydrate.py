"""Reload for AG-UI clients (docs/reference/neuron-streaming-spec.md section 7.3).

``hydrate`` rebuilds, from stored history and the run, the AG-UI messages and pending
interrupts a client held when the live stream ended: ``messages`` seeds the client's
``initialMessages``, ``interrupts`` its ``pendingInterrupts``. It uses the live
adapter's id and shape helpers, so a reload shows the same ids as the stream did.

Two differences from the live stream are deliberate:

- a frontend wait reloads as one ``tool_results`` interrupt (agui.wire.PUBLIC_REASONS) listing
  the still-pending calls (live it was a plain handoff; the reload discarded whatever
  the browser was executing, so the client must be asked again);
- activities and AG-UI ``state`` are not stored, so they are not restored.

relayline stores the turn's user message when the run starts, in the same transaction,
so the reference's step 1 (append the run's uncommitted input) cannot happen here; what
can happen is a latest page too short to reach back to that message, which
the reload route (``GET /agui/threads/<id>``) prevents by extending the page.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from relayline.shared.batch import request_from_record, results_of, settled_text
from relayline.shared.interrupts import ToolResultsRequest
from relayline.shared.jsonutil import dumps
from relayline.shared.messages import Message
from relayline.shared.persistence.store import RunRecord
from relayline.shared.protocols.agui.wire import (
    Hydrated,
    MessageJSON,
    interrupts_json,
    reasoning_id,
    tool_call_json,
    tool_message_json,
)
from relayline.shared.tools import redacted_inputs

Redact = Mapping[str, Collection[str]]


def hydrate(
    stored_messages: Sequence[Message],
    run: RunRecord | None,
    *,
    redact: Redact | None = None,
) -> Hydrated:
    """``{"messages": [...], "interrupts": [...]}`` for one page of stored messages.

    Pass ``run`` (the thread's current run) only with the latest page: on it, a call
    with no result belongs to the batch in progress and is held back unless the live
    stream had already published it, exactly as live. Older pages pass None and show
    every call. ``redact`` maps tool names to argument names never published (the
    tools' ``redact``); stored arguments are otherwise shown as the model sent them.
    """
    waiting = request_from_record(run) if run is not None else None  # suspended only
    dispatched: set[str] = set()
    settled: dict[str, tuple[str, bool]] = {}
    hidden_args: dict[str, Collection[str]] = {}
    if run is not None:
        # The open batch records what its own tools redact.
        open_batch = run.checkpoint.get("batch")
        for open_call in open_batch["calls"] if open_batch is not None else ():
            hidden_args[open_call["id"]] = open_call.get("redact", ())
    if isinstance(waiting, ToolResultsRequest) and run is not None:
        dispatched = set(waiting.pending_ids)
        # Results settled while the batch still waits: accepted frontend results, and
        # backend results that the live stream published before the handoff.
        settled = {k: settled_text(v) for k, v in results_of(run.accepted).items()}
    # Call ids are matched by position, not globally: some model servers reuse ids
    # across turns, so a call counts as answered only by a tool message after it, and
    # the open batch is the last message proposing a given id.
    answered_after: dict[str, set[str]] = {}
    newest_holder: dict[str, str] = {}
    later: set[str] = set()
    for message in reversed(stored_messages):
        if message.role == "tool":
            later |= {part.call_id for part in message.tool_results}
        elif message.role == "assistant":
            answered_after[message.id] = set(later)
            for call in message.tool_calls:
                newest_holder.setdefault(call.id, message.id)

    messages: list[MessageJSON] = []
    for message in stored_messages:
        if message.role == "tool":
            messages += [
                tool_message_json(p.call_id, p.content, p.is_error) for p in message.tool_results
            ]
            continue
        if message.role != "assistant":
            # Stored user and system messages hold text only, so content stays a string.
            messages.append({"id": message.id, "role": message.role, "content": message.text})
            continue
        answered = answered_after[message.id]
        in_batch = {c.id for c in message.tool_calls if newest_holder[c.id] == message.id}
        live = in_batch & (dispatched | set(settled))  # published live before the wait
        visible = [c for c in message.tool_calls if run is None or c.id in answered | live]
        if message.reasoning:
            rid = reasoning_id(message.id)
            messages.append({"id": rid, "role": "reasoning", "content": message.reasoning})
        if message.text or visible:
            assistant: MessageJSON = {"id": message.id, "role": "assistant"}
            assistant["content"] = message.text
            if visible:
                assistant["toolCalls"] = [
                    tool_call_json(
                        c.id, c.name, dumps(_shown(c.id, c.name, c.inputs, redact, hidden_args))
                    )
                    for c in visible
                ]
            messages.append(assistant)
        for call in visible:
            if call.id in live and call.id in settled and call.id not in answered:
                content, is_error = settled[call.id]
                messages.append(tool_message_json(call.id, content, is_error))
    interrupts = interrupts_json(waiting) if waiting is not None else []
    return {"messages": messages, "interrupts": interrupts}


def _shown(
    call_id: str,
    name: str,
    inputs: Mapping[str, Any],
    redact: Redact | None,
    hidden_args: Mapping[str, Collection[str]],
) -> dict[str, Any]:
    hidden = set(hidden_args.get(call_id, ())) | set((redact or {}).get(name, ()))
    return redacted_inputs(inputs, hidden) if hidden else dict(inputs)
