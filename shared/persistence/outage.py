"""The database being unreachable, told apart from every other database error, and a
write retried through an outage.

An outage (the server stopped, restarting, failed over, a connection cut mid-query) is
not the request's fault nor the run's: the web answers 503 with ``Retry-After``
(``DatabaseUnavailableError``), and a worker keeps what it holds (a tool's result)
and writes it once the server is back, rather than losing it to a failure that a
recovery would settle as "the tool was interrupted"."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final, TypeVar

import sqlalchemy as sa

logger = logging.getLogger("relayline.persistence")

T = TypeVar("T")

#: how long a worker keeps retrying a write through an outage before it gives up
DATABASE_RETRY_SECONDS: Final = 300.0
#: the first pause between two attempts; it doubles up to ``_MAX_PAUSE``
_FIRST_PAUSE = 0.25
_MAX_PAUSE = 5.0


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached, rather than that it refused
    what was asked (a constraint, a type, a syntax error)."""
    if isinstance(exc, sa.exc.TimeoutError):  # no pooled connection came free
        return True
    if isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError)):
        return True
    return isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated


def through_outage(
    write: Callable[[], T],
    *,
    what: str,
    budget: float = DATABASE_RETRY_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``write()``, retried with backoff while the database is unreachable, for up to
    ``budget`` seconds; then the last outage error is raised. Any other error is
    raised at once. ``what`` names the write in the operator's log lines."""
    deadline = time.monotonic() + budget
    pause = _FIRST_PAUSE
    waited = False
    while True:
        try:
            result = write()
        except Exception as exc:
            if not is_outage(exc) or time.monotonic() + pause > deadline:
                raise
            if not waited:
                logger.warning("the database is unreachable; retrying %s: %s", what, exc)
                waited = True
            sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE)
            continue
        if waited:
            logger.warning("the database is back; %s was written", what)
        return result
