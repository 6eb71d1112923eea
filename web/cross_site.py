"""Cross-site protection of the routes that change state (every method but GET, HEAD and
OPTIONS), checked before the body is read or anyone is resolved.

A page of any site can send another site a "simple" request without asking it first (no
CORS preflight): a form post, or a fetch with a text/plain, form-encoded or untyped body,
and the browser adds that site's cookies. Two rules keep such a request from acting:

- Content type: a body is taken only as its route's media type (``application/json``;
  the form encoding pusher-js sends to ``POST /pusher/auth``); another type, or a body
  without one, is a 415. A page can send JSON to another origin only after a preflight,
  which relayline consents to only for RELAYLINE_CORS_ORIGINS (web.cors).
- Origin: when the application's ``current_user`` decides who asks (a session cookie is
  sent whichever page asks), a request whose ``Origin`` is neither this server's (the
  request's host, or RELAYLINE_PUBLIC_URL) nor listed in RELAYLINE_CORS_ORIGINS is a
  403. It covers what the first rule lets through: a stop without a body, the
  form-encoded Pusher auth. Browsers send ``Origin`` with every cross-origin request of
  these methods, so a request without one (a server, curl) passes. Bearer tokens
  (RELAYLINE_AUTH=token, jwt) are never sent by a browser on its own: no Origin rule.
"""

from __future__ import annotations

import logging

from flask import request
from werkzeug.exceptions import Forbidden, UnsupportedMediaType

from relayline.shared.origins import origin_of
from relayline.web.openapi import PARENT
from relayline.web.schemas import OPERATIONS
from relayline.web.services import Services, services

logger = logging.getLogger("relayline.web")

#: methods that read only: neither rule applies to them
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: the media type of a route without an operation (none: web.openapi refuses that)
DEFAULT_MEDIA = "application/json"


class ForeignOrigin(Forbidden):
    """A cookie-authenticated request from a page this server does not trust (403)."""


def guard() -> None:
    """``before_request`` of relayline's parent blueprint (web.extension)."""
    if request.method in SAFE_METHODS:
        return
    _check_media()
    svc = services()
    if svc.user_loader is not None:
        _check_origin(svc)


def _check_media() -> None:
    endpoint = (request.endpoint or "").removeprefix(PARENT)
    operation = OPERATIONS.get(endpoint)
    media = operation.media if operation is not None else DEFAULT_MEDIA
    declared = request.headers.get("Content-Type", "")
    chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    if not declared and not request.content_length and not chunked:
        return  # no body to misread (a stop, a delete)
    if request.mimetype == media:
        return
    sent = f"Content-Type {request.mimetype}" if request.mimetype else "no Content-Type"
    _log("UnsupportedMediaType", f"{sent} where {media} is taken")
    raise UnsupportedMediaType(
        f"This route takes a body of Content-Type {media} only, and this one has {sent}: "
        "a page of any site could send it without the browser asking this server first."
    )


def _check_origin(svc: Services) -> None:
    sent = request.headers.get("Origin")
    if sent is None:
        return  # not a browser's cross-origin request
    origin = origin_of(sent)
    own = {origin_of(request.host_url), origin_of(svc.settings.public_url)}
    if origin is not None and (origin in own or origin in svc.settings.cors_origins):
        return
    _log("ForeignOrigin", f"Origin {sent!r}")
    raise ForeignOrigin(
        f"A page of {sent!r} may not act for the signed-in user: only this server's own "
        "pages and the origins in RELAYLINE_CORS_ORIGINS may."
    )


def _log(reason: str, detail: str) -> None:
    # One line per refusal: an operator tells a misconfigured origin list from an attack.
    logger.warning("cross-site refusal %s: %s %s, %s", reason, request.method, request.path, detail)
