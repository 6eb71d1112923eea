"""Why a run failed, as the person who owns its thread reads it and as the operator logs it.

Every failure has a stable code (``relayline.shared.errors.FailureCode``) and two texts:
``message``, for the thread's owner (what failed and what to set, never a stack trace),
and ``detail``, for the worker's log (what happened, technically). The code comes from
the error's ``reason``; a provider's ``advice`` is its message, and a provider error
without advice says only ``PROVIDER_FAILED`` (the provider's own text names hosts and SDK
internals). An error relayline does not know is ``internal`` and says only
``RUN_FAILED``: its own text may hold anything. Both texts pass ``redact_keys``, whoever
wrote them.

The web reads a stored failure back with ``stored_failure`` (``GET /api/threads/<id>``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final, TypedDict

from relayline.shared.errors import (
    FAILURE_CODES,
    FailureCode,
    ProviderError,
    RelaylineError,
)
from relayline.shared.texts import PROVIDER_FAILED, RUN_FAILED

#: characters of an exception's text a detail keeps
DETAIL_CHARS: Final = 500
#: bearer tokens and the usual API key shapes (OpenAI, Groq, xAI, Google), in case a
#: provider or a tool echoes one back
_KEY_PATTERNS: Final = re.compile(
    r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}|\b(sk|gsk|xai|AIza)[-_A-Za-z0-9]{12,}"
)
#: the classes of a task's time limit (Celery's, checked by name: the core imports no Celery)
_TIME_LIMITS: Final = frozenset({"SoftTimeLimitExceeded", "TimeLimitExceeded"})


class FailureJSON(TypedDict):
    """A failure as clients read it: ``run.error`` of ``GET /api/threads/<id>``."""

    code: str
    message: str


class StoredFailure(FailureJSON):
    """A failure as the run's checkpoint keeps it (``failure``), with the operator's detail."""

    detail: str


@dataclasses.dataclass(frozen=True)
class RunFailure:
    code: FailureCode
    #: what the thread's owner reads
    message: str
    #: what the operator's log says
    detail: str

    def to_json(self) -> FailureJSON:
        return {"code": self.code, "message": self.message}

    def stored(self) -> StoredFailure:
        return {"code": self.code, "message": self.message, "detail": self.detail}


def redact_keys(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with ``secrets`` and anything shaped like an API key or a bearer token
    replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_PATTERNS.sub(lambda m: (m.group(1) or "") + "***", text)


def failure_of(exc: BaseException) -> RunFailure:
    """The code and texts of a run that failed with ``exc``."""
    detail = _detail(exc)
    if isinstance(exc, ProviderError):
        return _failure(exc.reason, exc.advice or PROVIDER_FAILED, detail)
    if isinstance(exc, RelaylineError) and exc.reason != "internal":
        return _failure(exc.reason, exc.message, detail)
    if type(exc).__name__ in _TIME_LIMITS:
        message = "The run took longer than the worker's time limit and was stopped."
        return _failure("timeout", message, detail)
    return _failure("internal", RUN_FAILED, detail)


def stored_failure(stored: object, error: str | None) -> FailureJSON | None:
    """A failed run's ``run.error``: its checkpoint's ``failure`` (``stored``), else the
    bare ``error`` a run failed before failures had codes."""
    if isinstance(stored, dict) and stored.get("code") in FAILURE_CODES:
        return {"code": str(stored["code"]), "message": str(stored.get("message") or RUN_FAILED)}
    if error is None:
        return None
    return {"code": "internal", "message": error}


def failure_code(stored: object, error: str | None) -> str | None:
    """The code of ``stored_failure``; None for a run that did not fail."""
    found = stored_failure(stored, error)
    return None if found is None else found["code"]


def _failure(code: FailureCode, message: str, detail: str) -> RunFailure:
    return RunFailure(code, redact_keys(message), detail)


def _detail(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, RelaylineError) else str(exc)
    flat = " ".join(f"{type(exc).__name__}: {text}".split())
    if len(flat) > DETAIL_CHARS:
        flat = flat[:DETAIL_CHARS] + "…"
    return redact_keys(flat)
