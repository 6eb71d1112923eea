"""Errors raised by relayline's core, kept in one module to avoid import loops.

Hierarchy::

    RelaylineError
    ├── InputTranslationError      bad input from a client (HTTP 400)
    │   └── InvalidTextError       a lone surrogate anywhere, a control char in an id (HTTP 400)
    ├── WorkflowError              the run refuses the operation (HTTP 409)
    │   ├── StaleRunError          expected run id or attempt is no longer current (HTTP 409)
    │   ├── RunInFlightError       a new turn while a run holds the thread (HTTP 409)
    │   ├── ConflictError          a concurrent change won the compare-and-set; retry (HTTP 409)
    │   │   └── FencedOutError     a newer attempt took the run over; its writer stops (HTTP 409)
    │   ├── RunNotWaitingError     a continuation for a run that no longer waits for it (HTTP 409)
    │   └── ExpiredError           the wait's deadline has passed (HTTP 409)
    ├── StepLimitError             the turn needed more model calls than max_steps allows
    ├── ToolError                  a tool cannot run here (frontend tool executed on the backend)
    ├── ToolFailedError            a tool declared @tool(on_error="fail") raised: the run fails
    ├── StreamAdapterError         an adapter cannot encode what it was given
    ├── ProviderError              the model provider failed (HTTP error, broken stream)
    ├── RunFailedError             the run failed; raised by streaming consumers after error frames
    ├── UnavailableError           a service the request needs is down; retry later (HTTP 503)
    │   ├── AgentUnavailableError  the configured agent cannot be loaded (HTTP 503)
    │   └── DatabaseUnavailableError  the database cannot be reached (HTTP 503)
    └── DeliveryError              this stream ends, the run does not; the client is told why
        ├── RunElsewhereError      another delivery carries the run on (redelivered, duplicate)
        ├── StreamLostError        the stream's transport broke; the run goes on, resume it
        └── NoWorkerError          no worker took the turn in time: it was withdrawn, never run

A refusal raised before a response starts is answered ``{"error": message, "type": class
name}`` (and its ``details()``) with its status from ``HTTP_STATUS``
(``web/errors.py``). The errors in ``NOT_HTTP`` are failures of a run, not answers to
a request: the protocol's error frame reports them, and one escaping before the headers
is a plain 500.

A run that fails reports a stable reason code (``FailureCode``): an error's ``reason``,
read by ``relayline.shared.failures``, which also words what the thread's owner reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypedDict, cast, get_args


class RefusalDetails(TypedDict, total=False):
    """What a refusal's JSON body carries beside ``error`` and ``type``."""

    #: a stable reason a client can branch on
    code: str
    runId: str
    #: the run's status as the refusal found it
    status: str


#: why a run failed, on the wire (AG-UI ``RUN_ERROR.code``, native ``error.code``), in
#: ``GET /api/threads/<id>`` (``run.error.code``) and in the worker's log; docs/guide.md
#: lists them. Stable: clients may branch on them.
FailureCode = Literal[
    "provider_auth",
    "provider_unreachable",
    "provider_missing_extra",
    "model_not_found",
    "provider_rate_limited",
    "provider_error",
    "tool_failed",
    "step_limit",
    "timeout",
    "agent_unavailable",
    "internal",
]
FAILURE_CODES: Final = cast(tuple[FailureCode, ...], get_args(FailureCode))


#: why a request was refused, as its JSON body's ``code`` (web.errors); stable: clients
#: may branch on them, and the docs list them
RefusalCode = Literal[
    "MALFORMED_ANSWER",
    "THREAD_ID_REQUIRED",
    "THREAD_ID_INVALID",
    "THREAD_BUSY",
    "BODY_TOO_LARGE",
    "TOKEN_MISSING",
    "TOKEN_INVALID",
    "TOKEN_EXPIRED",
]


class RelaylineError(Exception):
    """Root of every relayline error. ``message`` is the text a developer can act on;
    ``reason`` the failure code a run failing with it reports; ``code``, when given, the
    refusal's code (its JSON body's ``code``)."""

    reason: FailureCode = "internal"

    def __init__(self, message: str, *, code: RefusalCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        # Not ``code``: DeliveryError's class attribute of that name is a wire code.
        self.refusal_code = code

    def details(self) -> RefusalDetails:
        """Fields of the refusal's body beside ``error`` and ``type``: its code, if any."""
        return {} if self.refusal_code is None else {"code": self.refusal_code}


class InputTranslationError(RelaylineError):
    """A client payload cannot be turned into a continuation (maps to HTTP 400)."""


class InvalidTextError(InputTranslationError):
    """A field holds text the database, JSON or the broker refuses: a lone UTF-16
    surrogate anywhere, or a control character in an id (HTTP 400, like its parent)."""


class WorkflowError(RelaylineError):
    """The durable run refuses the operation (maps to HTTP 409). The class names the
    kind of refusal: clients read it as the response's ``type``."""


class StaleRunError(WorkflowError):
    """A continuation names a run id or attempt that is no longer current."""


class RunInFlightError(WorkflowError):
    """A new turn was asked for while a run is suspended or running on the thread."""


class ConflictError(WorkflowError):
    """Another process changed the run between read and write; nothing was written."""


class FencedOutError(ConflictError):
    """A writer of a run was fenced out: another process took the run over at a newer
    attempt (its recovery), so the run's store or its segment's log refused this
    writer's write. The run is not failed: the taker decides its fate. A worker that
    meets it stops quietly (one log line, no failure frame in any stream).
    ``fence_reason`` says what refused the write and at which attempt."""

    def __init__(
        self, message: str, *, fence_reason: str = "a newer attempt took the run over"
    ) -> None:
        super().__init__(message)
        self.fence_reason = fence_reason


#: why a continuation found no interruption to answer (``RunNotWaitingError.code``)
NotWaitingCode = Literal["ALREADY_ANSWERED", "RUN_NOT_WAITING"]


class RunNotWaitingError(WorkflowError):
    """A continuation (approvals, tool results) lost: the run no longer waits for it.
    ``code`` says why: ``ALREADY_ANSWERED`` (another request answered this interruption
    first and continues the run) or ``RUN_NOT_WAITING`` (the run is running or has ended);
    ``status`` is the run's status as the refusal found it."""

    def __init__(self, message: str, *, code: NotWaitingCode, run_id: str, status: str) -> None:
        super().__init__(message)
        self.code: NotWaitingCode = code
        self.run_id = run_id
        self.status = status

    def details(self) -> RefusalDetails:
        return {"code": self.code, "runId": self.run_id, "status": self.status}


class ExpiredError(WorkflowError):
    """A frontend wait passed its deadline; late results are refused."""


class StepLimitError(RelaylineError):
    """The turn needed more model calls than AgentSpec.max_steps allows."""

    reason: FailureCode = "step_limit"


class ToolError(RelaylineError):
    """A tool cannot be executed here."""


class ToolFailedError(RelaylineError):
    """A tool declared ``@tool(on_error="fail")`` raised: instead of handing the error to
    the model, the run fails, and ``message`` (the tool's name and its error) is what
    the thread's owner reads."""

    reason: FailureCode = "tool_failed"

    def __init__(self, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


class StreamAdapterError(RelaylineError):
    """An adapter was given something it cannot encode."""


class ProviderError(RelaylineError):
    """The model provider failed; the run is recorded as failed. ``message`` says what
    happened (for the operator's log; keys never appear in it), ``reason`` its failure
    code, ``advice`` what the thread's owner reads: what failed and what to set (None:
    a neutral "the model provider failed", since ``message`` may name hosts and SDK
    internals)."""

    reason: FailureCode = "provider_error"

    def __init__(
        self, message: str, *, reason: FailureCode | None = None, advice: str | None = None
    ) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.advice = advice


class RunFailedError(RelaylineError):
    """A run failed. Raised to streaming consumers after the adapter's error frames."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class UnavailableError(RelaylineError):
    """A dependency (Redis, the broker, the database) is unreachable: nothing was
    accepted, and the client may retry after ``retry_after`` seconds (HTTP 503)."""

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AgentUnavailableError(UnavailableError):
    """The agent a request or a job names cannot be loaded (a typo in RELAYLINE_AGENT, an
    import error in its module, a factory that raises): the web answers 503, a worker
    fails the turn with ``agent_unavailable``."""

    reason: FailureCode = "agent_unavailable"

    def __init__(self, message: str, retry_after: int = 30) -> None:
        super().__init__(message, retry_after)


class DatabaseUnavailableError(UnavailableError):
    """The database cannot be reached (stopped, restarting, failing over): the request
    changed nothing it could not finish, and the client may retry it (HTTP 503 with
    ``Retry-After``; the body's ``code`` is ``database_unavailable``)."""

    code: Final = "database_unavailable"

    def details(self) -> RefusalDetails:
        return {"code": self.code}


class DeliveryError(RelaylineError):
    """One delivery of a run ends while the run itself goes on. Unlike a run's failure
    (always "The run failed." on the wire), its message and ``code`` are sent to the
    client as they are, so it can act: resume the thread's stream or reload."""

    code: str = "DELIVERY_ENDED"


class RunElsewhereError(DeliveryError):
    """The run is carried on by another task or request (a redelivered task while its
    holder lives, the loser of a duplicate submission)."""

    code = "RUN_CONTINUES_ELSEWHERE"


class StreamLostError(DeliveryError):
    """The transport of this stream broke (Redis restarted, the relay lost its reader);
    the run was not reported failed."""

    code = "STREAM_INTERRUPTED"


class NoWorkerError(DeliveryError):
    """No worker took the turn within RELAYLINE_NO_WORKER_SECONDS: the relay withdrew it
    (web.waiting), so it will never run; the client may send it again."""

    code = "no_worker"


#: The HTTP status of every error a request can be refused with (web/errors.py).
HTTP_STATUS: Final[Mapping[type[RelaylineError], int]] = MappingProxyType(
    {
        InputTranslationError: 400,
        InvalidTextError: 400,
        WorkflowError: 409,
        StaleRunError: 409,
        RunInFlightError: 409,
        ConflictError: 409,
        FencedOutError: 409,
        RunNotWaitingError: 409,
        ExpiredError: 409,
        UnavailableError: 503,
        AgentUnavailableError: 503,
        DatabaseUnavailableError: 503,
    }
)

#: Errors with no status of their own: a run's failures, never a request's refusal.
NOT_HTTP: Final[frozenset[type[RelaylineError]]] = frozenset(
    {
        RelaylineError,
        StepLimitError,
        ToolError,
        ToolFailedError,
        StreamAdapterError,
        ProviderError,
        RunFailedError,
        DeliveryError,
        RunElsewhereError,
        StreamLostError,
        NoWorkerError,
    }
)


def http_status(error: BaseException) -> int | None:
    """The status of the nearest class of ``error`` in HTTP_STATUS (so an application's
    subclass of WorkflowError is a 409 too); None for any other error."""
    for cls in type(error).__mro__:
        if issubclass(cls, RelaylineError) and cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return None
