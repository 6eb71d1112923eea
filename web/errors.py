"""Errors before any header become JSON ``{"error", "type"}`` (and the error's ``details()``,
such as a ``code``) with the status of
docs/DESIGN.md section 5: 400 bad input, 409 refusals, 404 unknown or foreign, 413 oversize,
503 (with ``Retry-After``) when a dependency is down (the database's with
``code: database_unavailable``).
relayline's own statuses come from ``relayline.shared.errors.HTTP_STATUS``; ``type`` is the
exception's class name. Every refusal is one INFO line on the ``relayline.web`` logger
(method, path, status, type, its code if it has one, message), so an operator sees why a
client was turned away."""

from __future__ import annotations

import logging

import sqlalchemy as sa
from flask import Blueprint, Flask, Response, jsonify, request
from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from werkzeug.exceptions import HTTPException

from relayline.shared.errors import (
    AgentUnavailableError,
    DatabaseUnavailableError,
    RefusalDetails,
    RelaylineError,
    UnavailableError,
    http_status,
)
from relayline.shared.persistence.outage import is_outage
from relayline.shared.texts import DATABASE_UNAVAILABLE
from relayline.web.body_limit import BODY_TOO_LARGE

logger = logging.getLogger("relayline.web")

#: the 503's message when Redis or the broker cannot be reached
UNAVAILABLE = "The message queue is unavailable; nothing was sent. Retry shortly."


def error_response(
    status: int, message: str, kind: str, details: RefusalDetails | None = None
) -> Response:
    if status < 500:
        # The message may quote what the client sent: %r keeps a control character or
        # a lone surrogate from breaking the line. A refusal with a code names it.
        logger.info(
            "request refused: %s %s -> %d %s%s %r",
            request.method,
            request.path,
            status,
            kind,
            f" {details['code']}" if details and "code" in details else "",
            message,
        )
    response = jsonify({"error": message, "type": kind, **(details or {})})
    response.status_code = status
    return response


def init_app(app: Flask | Blueprint) -> None:
    """Answer errors as JSON: an application's (standalone) or a blueprint's (embedded:
    the host's other routes keep their own error pages)."""

    @app.errorhandler(RelaylineError)
    def refused(exc: RelaylineError) -> Response:
        status = http_status(exc)
        if status is None:  # a run's failure escaping before the headers: no refusal
            return unexpected(exc)
        if isinstance(exc, AgentUnavailableError):  # the operator's line: a setting is wrong
            logger.warning(
                "request refused: %s %s -> %d %s reason=%s %r",
                request.method,
                request.path,
                status,
                type(exc).__name__,
                exc.reason,
                exc.message,
            )
        response = error_response(status, exc.message, type(exc).__name__, exc.details())
        if isinstance(exc, UnavailableError):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    def outage(exc: Exception) -> Response:
        # Redis or the broker is down before the headers (subscribe, announce, enqueue):
        # nothing was enqueued, so the client may retry the same request.
        logger.warning("a dependency is down: %s", exc)
        return refused(UnavailableError(UNAVAILABLE))

    for kind in (RedisConnectionError, RedisTimeoutError, OperationalError):
        app.register_error_handler(kind, outage)

    def database_error(exc: Exception) -> Response:
        # The server is down or a connection broke: a transaction that did not commit
        # changed nothing, so the client may retry. Any other database error is a 500.
        if not is_outage(exc):
            return unexpected(exc)
        logger.warning("the database is unreachable: %s", exc)
        return refused(DatabaseUnavailableError(DATABASE_UNAVAILABLE))

    for database_kind in (sa.exc.DBAPIError, sa.exc.TimeoutError):
        app.register_error_handler(database_kind, database_error)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        message = exc.description or exc.name
        details: RefusalDetails = {}
        if exc.code == 413:  # the same words whether the length was announced or not
            message = BODY_TOO_LARGE
            details["code"] = "BODY_TOO_LARGE"
        code = getattr(exc, "refusal_code", None)  # web.auth's 401s
        if isinstance(code, str):
            details["code"] = code
        response = error_response(exc.code or 500, message, type(exc).__name__, details)
        # The exception's own headers (WWW-Authenticate of a 401, Allow of a 405) stay.
        response.headers.extend((k, v) for k, v in exc.get_headers() if k != "Content-Type")
        return response

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        logger.error("request failed", exc_info=exc)
        return error_response(500, "The server could not handle the request.", "InternalError")
