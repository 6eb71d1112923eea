"""Errors before any header become JSON ``{"error", "type"}`` with the status of
DESIGN section 5: 400 bad input, 409 refusals, 404 unknown or foreign, 413 oversize."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from shared.errors import InputTranslationError, WorkflowError

logger = logging.getLogger("relayline.web")


def error_response(status: int, message: str, kind: str) -> Response:
    response = jsonify({"error": message, "type": kind})
    response.status_code = status
    return response


def init_app(app: Flask) -> None:
    @app.errorhandler(InputTranslationError)
    def bad_input(exc: InputTranslationError) -> Response:
        return error_response(400, exc.message, type(exc).__name__)

    @app.errorhandler(WorkflowError)
    def refused(exc: WorkflowError) -> Response:
        return error_response(409, exc.message, type(exc).__name__)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return error_response(exc.code or 500, exc.description or exc.name, type(exc).__name__)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        logger.exception("request failed")
        return error_response(500, "The server could not handle the request.", "InternalError")
