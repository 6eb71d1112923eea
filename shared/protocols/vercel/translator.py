"""Vercel AI SDK ``useChat`` bodies to native answers
(docs/reference/neuron-streaming-spec.md sections 6.3 and 6.6).

The client sends its whole ``UIMessage[]`` history. Answers live in the tool parts
of assistant messages: ``approval-responded`` parts carry decisions,
``output-available`` and ``output-error`` parts carry frontend results. Vercel sends
no tool catalog; the backend declares its frontend tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relayline.shared.errors import InputTranslationError
from relayline.shared.interrupts import Answers, ApprovalRequest, ResultEntry, ToolResultsRequest
from relayline.shared.protocols.rules import (
    AnyRequest,
    answer,
    approval_decision,
    candidate_ids,
    entries,
    finish,
    require_object,
)
from relayline.shared.protocols.translator import NewTurn

SHAPE_ERROR = (
    "Vercel input must end with a user message or an assistant message carrying tool parts."
)


class VercelAIInputTranslator:
    """Translate Vercel UI message histories against the persisted interrupt."""

    def translate(self, payload: Mapping[str, Any], request: AnyRequest) -> Answers:
        """The native map for ``request``; see InputTranslator for the error contract."""
        payload = require_object(payload)
        candidates = candidate_ids(request)
        answers: Answers = {}
        for message in entries(payload, "messages"):
            if message.get("role") != "assistant":
                continue
            for part in entries(message, "parts"):
                kind = part.get("type", "")
                if not isinstance(kind, str) or not (
                    kind == "dynamic-tool" or kind.startswith("tool-")
                ):
                    continue
                call_id = part.get("toolCallId")
                # Full history also holds earlier tool cycles; only this request counts.
                if not isinstance(call_id, str) or call_id not in candidates:
                    continue
                _tool_part(request, call_id, part, answers)
        return finish(request, answers)

    # -- shape of a request -------------------------------------------------------

    @staticmethod
    def is_continuation(payload: Mapping[str, Any]) -> bool:
        """True when the history ends with an assistant message (tool answers in its parts)."""
        messages = entries(require_object(payload), "messages")
        return bool(messages) and messages[-1].get("role") == "assistant"

    @staticmethod
    def new_turn_text(payload: Mapping[str, Any]) -> NewTurn:
        """``(message id, text)`` of the trailing user message, text parts concatenated.

        A trailing assistant message is a continuation, not a new turn; anything else
        is refused rather than guessed at.
        """
        messages = entries(require_object(payload), "messages")
        if not messages or messages[-1].get("role") != "user":
            raise InputTranslationError(SHAPE_ERROR)
        message = messages[-1]
        text = "".join(
            part["text"]
            for part in entries(message, "parts")
            if part.get("type") == "text" and isinstance(part.get("text"), str)
        )
        message_id = message.get("id")
        return NewTurn(message_id if isinstance(message_id, str) and message_id else None, text)


def _tool_part(
    request: AnyRequest, call_id: str, part: Mapping[str, Any], answers: Answers
) -> None:
    """Fold one tool part of the current request into ``answers``."""
    state = part.get("state")
    if state == "approval-responded":
        if not isinstance(request, ApprovalRequest):
            return  # a prior approval is not an execution result
        approval = part.get("approval")
        if not isinstance(approval, Mapping) or approval.get("id") != call_id:
            raise InputTranslationError(f"Approval ID does not match tool call '{call_id}'.")
        answer(answers, call_id, approval_decision(approval))
    elif state in ("output-available", "output-error"):
        if not isinstance(request, ToolResultsRequest):
            # A result must not bypass the approval gate that is still open.
            raise InputTranslationError(
                f"Tool call '{call_id}' is awaiting approval, not execution results."
            )
        if state == "output-available":
            if "output" not in part:
                raise InputTranslationError(f"Tool call '{call_id}' has no output.")
            # Any JSON: false, 0, "", [] and null keep their types.
            result: ResultEntry = {"result": part["output"]}
        else:
            error_text = part.get("errorText")
            if not isinstance(error_text, str):
                raise InputTranslationError(f"Tool call '{call_id}' requires errorText.")
            result = {"error": error_text}
        answer(answers, call_id, result)
    # input-streaming, input-available, approval-requested, output-denied: display only.
