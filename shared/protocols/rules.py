"""Rules shared by every protocol translator (docs/reference/neuron-streaming-spec.md section 6.4).

A translator reads a client payload against the single current interrupt, which comes
from persistence, never from the client, and returns the native answer map. The
helpers here hold what AG-UI and Vercel have in common: which call ids may be
answered, list reading, the approval mapping, duplicate answers and the final checks.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime
from typing import Any, Protocol

from relayline.shared.errors import InputTranslationError
from relayline.shared.interrupts import (
    Answer,
    Answers,
    ApprovalRequest,
    InterruptRequest,
    ToolResultsRequest,
)
from relayline.shared.texts import NO_MATCH as NO_MATCH  # re-exported: it lived here


class WaitRequest(Protocol):
    """Any interrupt a translator can answer: the tool waits and a generic event wait.

    A generic wait (neither tool results nor approval) accepts any object payload
    through AG-UI ``resume``; the two tool requests satisfy this shape as well.
    """

    @property
    def interrupt_id(self) -> int: ...

    @property
    def expires_at(self) -> datetime | None: ...


AnyRequest = InterruptRequest | WaitRequest


def require_object(payload: object) -> Mapping[str, Any]:
    """The payload itself must be a JSON object; anything else is a client error."""
    if not isinstance(payload, Mapping):
        raise InputTranslationError("The payload must be a JSON object.")
    return payload


def candidate_ids(request: AnyRequest) -> set[str]:
    """Call ids a payload may answer: actions (approval) or pending plus accepted results.

    Anything else (a generic wait) has none, so tool parts can never answer it.
    """
    if isinstance(request, ApprovalRequest | ToolResultsRequest):
        ids: set[str] = set()
        for call_id in request.candidate_ids:
            # A persisted call without an id could never be correlated with an answer.
            if not call_id:
                raise InputTranslationError("A tool call requires a non-empty call ID.")
            ids.add(call_id)
        return ids
    return set()


def entries(payload: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """Read the list under ``key``: missing means empty; null, maps and scalars are refused."""
    value = payload.get(key, [])
    if not isinstance(value, list):
        raise InputTranslationError(f"'{key}' must be a list.")
    for entry in value:
        if not isinstance(entry, Mapping):
            raise InputTranslationError(f"Every '{key}' entry must be an object.")
    return value


def approval_decision(payload: Any) -> str | list[str]:
    """Map ``{approved, reason?}`` to ``"approve"``, ``"reject"`` or ``["reject", reason]``."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("approved"), bool):
        raise InputTranslationError("An approval response requires a boolean approved field.")
    if "editedArgs" in payload:
        # Approving different arguments than the model produced would need a new call.
        raise InputTranslationError("Approval with edited arguments is not supported.")
    reason = payload.get("reason")
    # A null reason counts as absent, as in the reference.
    if reason is not None and not isinstance(reason, str):
        raise InputTranslationError("An approval reason must be a string.")
    if payload["approved"]:
        return "approve"
    return "reject" if reason is None else ["reject", reason]


def same_json(left: Any, right: Any) -> bool:
    """Strict JSON equality: ``1``, ``1.0`` and ``true`` differ, and so does key order."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(
            same_json(a, b) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)


def answer(answers: MutableMapping[str, Answer], call_id: str, value: Answer) -> None:
    """Record one answer; an identical repeat is harmless, a different one is refused."""
    if call_id in answers and not same_json(answers[call_id], value):
        raise InputTranslationError(f"Conflicting responses for tool call '{call_id}'.")
    answers[call_id] = value


def finish(request: AnyRequest, answers: Answers) -> Answers:
    """Final checks in reference order: nothing matched (400), then result validation (409).

    The whole map is returned, restatements of accepted results included: the agent,
    not the translator, decides which entries are new.
    """
    if not answers:
        raise InputTranslationError(NO_MATCH)
    if isinstance(request, ToolResultsRequest):
        request.validate_results(answers)
    return answers
