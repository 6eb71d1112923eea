"""The translator interface: a client payload to the native answer map of one interrupt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from shared.interrupts import InterruptRequest


@runtime_checkable
class InputTranslator(Protocol):
    def translate(self, payload: Mapping[str, Any], request: InterruptRequest) -> dict[str, Any]:
        """Return the native map for ``request``: call id -> decision (approval) or
        call id -> ``{"result": ...}`` / ``{"error": "..."}`` (tool results).

        Raise InputTranslationError for malformed or unmatched input and
        WorkflowError when ``request.validate_results`` refuses the answers.
        """
        ...
