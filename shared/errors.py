"""Errors raised by relayline's core, kept in one module to avoid import loops.

Hierarchy::

    RelaylineError
    ├── InputTranslationError      bad input from a client (HTTP 400)
    ├── WorkflowError              the run refuses the operation (HTTP 409)
    │   ├── StaleRunError          expected run id or attempt is no longer current
    │   ├── RunInFlightError       a new turn while a run holds the thread
    │   ├── ConflictError          a concurrent change won the compare-and-set; retry
    │   └── ExpiredError           the wait's deadline has passed
    ├── ToolError                  a tool cannot run here (frontend tool executed on the backend)
    ├── StreamAdapterError         an adapter cannot encode what it was given
    ├── ProviderError              the model provider failed (HTTP error, broken stream)
    └── RunFailedError             the run failed; raised by streaming consumers after error frames
"""

from __future__ import annotations


class RelaylineError(Exception):
    """Root of every relayline error. ``message`` is the text a developer can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputTranslationError(RelaylineError):
    """A client payload cannot be turned into a continuation (maps to HTTP 400)."""


class WorkflowError(RelaylineError):
    """The durable run refuses the operation (maps to HTTP 409).

    ``reason`` is a stable code: ``conflict``, ``stale_run``, ``stale_attempt``,
    ``run_in_flight``, ``not_awaited``, ``executing``, ``settled``, ``expired``.
    """

    def __init__(self, message: str, reason: str = "refused") -> None:
        super().__init__(message)
        self.reason = reason


class StaleRunError(WorkflowError):
    """A continuation names a run id or attempt that is no longer current."""


class RunInFlightError(WorkflowError):
    """A new turn was asked for while a run is suspended or running on the thread."""


class ConflictError(WorkflowError):
    """Another process changed the run between read and write; nothing was written."""


class ExpiredError(WorkflowError):
    """A frontend wait passed its deadline; late results are refused."""


class ToolError(RelaylineError):
    """A tool cannot be executed here."""


class StreamAdapterError(RelaylineError):
    """An adapter was given something it cannot encode."""


class ProviderError(RelaylineError):
    """The model provider failed; the run is recorded as failed."""


class RunFailedError(RelaylineError):
    """A run failed. Raised to streaming consumers after the adapter's error frames."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause
