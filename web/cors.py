"""CORS for relayline's own routes (flask-cors on its parent blueprint, so a host
application's routes get none unless the host adds its own): a page on one of
RELAYLINE_CORS_ORIGINS (say a Next.js app on http://localhost:3000) may call relayline
on another origin. Off when the list is empty, the default.

- Origins: exactly the listed ones, echoed back (never ``*``), with ``Vary: Origin``.
  A preflight from any other origin is a 403 ``CorsOriginNotAllowed`` with one warning,
  so the operator sees why a browser's call failed (the browser shows only "CORS").
- Credentials: allowed (``Access-Control-Allow-Credentials: true``) only when the
  application's ``current_user`` decides who asks, as that is the one mode in which a
  cookie identifies the user; bearer tokens (RELAYLINE_AUTH=token, jwt) travel in an
  ``Authorization`` header, which needs no credentials mode.
- Headers: a client may send Content-Type, Authorization and Last-Event-ID, and may read
  the stream id, the queue place and the Vercel protocol marker.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Final

from flask import Blueprint, Response, request
from flask_cors import CORS
from werkzeug.exceptions import Forbidden

from relayline.shared.origins import origin_of

logger = logging.getLogger("relayline.web")

#: request headers a cross-origin page may send beyond the CORS-safelisted ones
ALLOW_HEADERS: Final = ("Content-Type", "Authorization", "Last-Event-ID")
#: response headers a cross-origin page may read beyond the CORS-safelisted ones
EXPOSE_HEADERS: Final = (
    "X-Relayline-Stream-Id",  # what POST /api/chat/<id>/stop names (activeStreamId)
    "X-Relayline-Queued",  # a queued turn's place (?multitask=enqueue)
    "x-vercel-ai-ui-message-stream",  # the UI message stream protocol marker
    "Retry-After",  # a 503's advice
    "WWW-Authenticate",  # why a token was refused
)
METHODS: Final = ("GET", "HEAD", "POST", "DELETE", "OPTIONS")
#: seconds a browser may cache a preflight's answer (Chromium caps it at 7200)
MAX_AGE: Final = 600


class CorsOriginNotAllowed(Forbidden):
    """A preflight from an origin that RELAYLINE_CORS_ORIGINS does not list (403)."""


def init_app(parent: Blueprint, origins: tuple[str, ...], *, credentials: bool) -> None:
    """CORS on relayline's parent blueprint for ``origins`` (normalized, as
    shared.origins.parse_origins gives them); ``credentials`` when a cookie may
    identify the user (the application's ``current_user``)."""
    parent.before_request(_refuser(origins))
    if not origins:
        return
    CORS(
        parent,
        # Exact, case-insensitive patterns: flask-cors would read a bracketed IPv6
        # origin as a regular expression, and a bare pattern matches any prefix.
        origins=[re.compile(re.escape(origin) + r"\Z", re.IGNORECASE) for origin in origins],
        methods=list(METHODS),
        allow_headers=list(ALLOW_HEADERS),
        expose_headers=list(EXPOSE_HEADERS),
        supports_credentials=credentials,
        max_age=MAX_AGE,
        vary_header=False,  # _vary_on_origin says it once, whatever the list
        intercept_exceptions=False,  # blueprints have no exception hooks to wrap
    )
    parent.after_request(_vary_on_origin)


def _refuser(origins: tuple[str, ...]) -> Callable[[], None]:
    def refuse_unlisted_preflight() -> None:
        sent = request.headers.get("Origin")
        if request.method != "OPTIONS" or sent is None:
            return
        if "Access-Control-Request-Method" not in request.headers:
            return  # a plain OPTIONS, not a browser's preflight
        if origin_of(sent) in origins:
            return
        # One line per refusal: the browser tells its user only that CORS failed.
        logger.warning(
            "cross-site refusal CorsOriginNotAllowed: %s %s, Origin %r",
            request.method,
            request.path,
            sent,
        )
        raise CorsOriginNotAllowed(
            f"A page of {sent!r} may not call this server: it is not one of "
            "RELAYLINE_CORS_ORIGINS (comma-separated scheme://host[:port])."
        )

    return refuse_unlisted_preflight


def _vary_on_origin(response: Response) -> Response:
    # flask-cors adds Vary: Origin only when several origins are listed, yet with one the
    # answer still differs by Origin (CORS headers or none): a shared cache must know.
    response.vary.add("Origin")
    return response
