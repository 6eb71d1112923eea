"""The translator interface: a client payload to the native answer map of one interrupt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from relayline.shared.interrupts import Answers, InterruptRequest


class NewTurn(NamedTuple):
    """The user message that starts a turn, as a client sent it: ``id`` is None when
    the client sent none (the server mints one), never the text "None"."""

    id: str | None
    text: str


@runtime_checkable
class InputTranslator(Protocol):
    def translate(self, payload: Mapping[str, Any], request: InterruptRequest) -> Answers:
        """Return the native map for ``request``: call id -> decision (approval) or
        call id -> ``{"result": ...}`` / ``{"error": "..."}`` (tool results).

        Raise InputTranslationError for malformed or unmatched input and
        WorkflowError when ``request.validate_results`` refuses the answers.
        """
        ...
