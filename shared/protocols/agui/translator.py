"""AG-UI ``RunAgentInput`` to native answers
(docs/reference/neuron-streaming-spec.md sections 6.3 and 6.5).

Two ways in: an explicit ``resume`` array (approvals, cancellations, generic waits)
or ``role: "tool"`` messages carrying frontend tool results. A non-empty ``resume``
wins and the messages are then ignored, because a client mirrors its whole chat
history into every request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from relayline.shared.errors import InputTranslationError
from relayline.shared.interrupts import (
    CANCELLED_ERROR,
    Answers,
    ApprovalRequest,
    ResultEntry,
    ToolResultsRequest,
)
from relayline.shared.protocols.agui.catalog import check_parameters
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
from relayline.shared.tools import FrontendTool

SHAPE_ERROR = "AG-UI input must end with a user message or carry a continuation."


def _utcnow() -> datetime:
    return datetime.now(UTC)


class AGUIInputTranslator:
    """Translate AG-UI payloads against the persisted interrupt.

    ``now`` is the clock used for interrupt expiry; tests pin it to a deadline.
    """

    def __init__(self, now: Callable[[], datetime] = _utcnow) -> None:
        self._now = now

    def translate(self, payload: Mapping[str, Any], request: AnyRequest) -> Answers:
        """The native map for ``request``; see InputTranslator for the error contract."""
        payload = require_object(payload)
        resume = entries(payload, "resume")
        if resume:
            return self._translate_resume(resume, request)
        # An empty resume carries no answer, so the tool messages decide.
        return self._translate_tool_messages(payload, request)

    # -- shape of a request -------------------------------------------------------

    @staticmethod
    def is_continuation(payload: Mapping[str, Any]) -> bool:
        """True for a non-empty ``resume`` or a trailing ``role: "tool"`` message."""
        payload = require_object(payload)
        if entries(payload, "resume"):
            return True
        messages = entries(payload, "messages")
        return bool(messages) and messages[-1].get("role") == "tool"

    @staticmethod
    def new_turn_message(payload: Mapping[str, Any]) -> dict[str, Any]:
        """The trailing user message of a new turn as ``{"id", "role", "content"}``.

        ``content`` is text: a list of content parts is joined from its text parts.
        Anything that is neither a new turn nor a continuation is a 400, never a
        guess; a continuation is not a new turn either.
        """
        payload = require_object(payload)
        if AGUIInputTranslator.is_continuation(payload):
            raise InputTranslationError("AG-UI input carries a continuation, not a new turn.")
        messages = entries(payload, "messages")
        if not messages or messages[-1].get("role") != "user":
            raise InputTranslationError(SHAPE_ERROR)
        message = messages[-1]
        message_id = message.get("id")
        if message_id is not None and not isinstance(message_id, str):
            raise InputTranslationError("An AG-UI message id must be a string.")
        text = _user_text(message)
        if not text.strip():
            # Refused here, before any header, rather than as an error frame after a 200.
            raise InputTranslationError("An AG-UI user message requires non-empty text.")
        return {"id": message_id or None, "role": "user", "content": text}

    @staticmethod
    def new_turn(payload: Mapping[str, Any]) -> NewTurn:
        """``new_turn_message`` as a typed user turn."""
        found = AGUIInputTranslator.new_turn_message(payload)
        return NewTurn(found["id"], found["content"])

    # -- client tool catalog ------------------------------------------------------

    @staticmethod
    def tools(
        payload: Mapping[str, Any], *, backend_tool_names: Collection[str] = ()
    ) -> list[FrontendTool]:
        """Build FrontendTools from ``payload["tools"]`` in order, without attaching them.

        Deciding the approval policy is left to the application.
        """
        payload = require_object(payload)
        tools: dict[str, FrontendTool] = {}
        for definition in entries(payload, "tools"):
            name = definition.get("name")
            description = definition.get("description")
            parameters = definition.get("parameters")
            if (
                not isinstance(name, str)
                or not name
                or not isinstance(description, str)
                or not isinstance(parameters, Mapping)
            ):
                raise InputTranslationError(
                    "An AG-UI tool requires name, description and parameters."
                )
            if name in tools:
                raise InputTranslationError(f"Duplicate frontend tool '{name}'.")
            if name in backend_tool_names:
                # The reference fixture fails with a 500 here; DESIGN chose 400 because
                # the client sent a catalog this agent cannot take, not a server fault.
                raise InputTranslationError(f"Frontend tool '{name}' collides with a backend tool.")
            schema = check_parameters(name, parameters)
            try:
                tools[name] = FrontendTool(name, description, schema)
            except ValueError as exc:  # a name outside the provider-safe tool name syntax
                raise InputTranslationError(str(exc)) from None
        return list(tools.values())

    # -- resume path --------------------------------------------------------------

    def _translate_resume(self, resume: list[Mapping[str, Any]], request: AnyRequest) -> Answers:
        # The ids AGUIAdapter publishes: one interrupt per action for approvals,
        # otherwise the request id as a string.
        if isinstance(request, ApprovalRequest):
            targets = [action.id for action in request.actions]
        else:
            targets = [str(request.interrupt_id)]
        answers: Answers = {}
        seen: set[str] = set()
        for entry in resume:
            target = entry.get("interruptId")
            if not isinstance(target, str) or target not in targets:
                raise InputTranslationError(
                    "The resume entry does not identify an active interrupt."
                )
            if target in seen:
                raise InputTranslationError(f"Duplicate resume entry '{target}'.")
            seen.add(target)
            status = entry.get("status")
            if status not in ("resolved", "cancelled"):
                raise InputTranslationError(
                    f"Interrupt '{target}' requires resolved or cancelled status."
                )
            if status == "cancelled" and "payload" in entry:
                raise InputTranslationError("A cancelled resume must omit payload.")
            if request.expires_at is not None and request.expires_at <= self._now():
                raise InputTranslationError(f"Interrupt '{target}' has expired.")
            self._resume_entry(request, target, status, entry, answers)
        if len(seen) != len(targets):
            raise InputTranslationError("AG-UI resume must address every published interrupt.")
        return finish(request, answers)

    @staticmethod
    def _resume_entry(
        request: AnyRequest,
        target: str,
        status: str,
        entry: Mapping[str, Any],
        answers: Answers,
    ) -> None:
        if isinstance(request, ApprovalRequest):
            decision = (
                "reject" if status == "cancelled" else approval_decision(entry.get("payload"))
            )
            answer(answers, target, decision)
        elif isinstance(request, ToolResultsRequest) and status == "cancelled":
            for call in request.tool_calls:
                if call.id not in request.accepted:  # a settled result stays settled
                    answer(answers, call.id, {"error": CANCELLED_ERROR})
        elif status == "resolved":
            payload = entry.get("payload")
            if not isinstance(payload, Mapping):
                raise InputTranslationError(f"Interrupt '{target}' requires an object payload.")
            # For tool results this is already the native map; validation comes last.
            answers.update(payload)
        else:
            raise InputTranslationError(
                f"Interrupt '{target}' does not support this resume operation."
            )

    # -- tool-message path --------------------------------------------------------

    @staticmethod
    def _translate_tool_messages(payload: Mapping[str, Any], request: AnyRequest) -> Answers:
        if not isinstance(request, ToolResultsRequest):
            # Approvals and generic waits are interrupts; only resume can answer them.
            raise InputTranslationError(
                "Pending AG-UI interrupts require an explicit resume array."
            )
        candidates = candidate_ids(request)
        answers: Answers = {}
        for message in entries(payload, "messages"):
            if message.get("role") != "tool":
                continue
            call_id = message.get("toolCallId")
            # Full history also holds earlier tool cycles; only this batch counts.
            if not isinstance(call_id, str) or call_id not in candidates:
                continue
            error = message.get("error")
            if error is not None:
                if not isinstance(error, str):
                    raise InputTranslationError(f"Tool call '{call_id}' requires a string error.")
                result: ResultEntry = {"error": error}
            else:
                content = message.get("content")
                if not isinstance(content, str):
                    raise InputTranslationError(f"Tool call '{call_id}' requires string content.")
                # AG-UI content is text, even when it happens to contain JSON.
                result = {"result": content}
            answer(answers, call_id, result)
        return finish(request, answers)


def _user_text(message: Mapping[str, Any]) -> str:
    """Text of a user message: a string, or the text parts of a content-part list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Non-text parts (binary, images) have no text to give the model.
        return "".join(
            part["text"]
            for part in entries(message, "content")
            if part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    raise InputTranslationError("An AG-UI user message requires text content.")
