"""Who is asking, and whether the thread is theirs. Anyone but the owner gets 404.

The owner of a request is decided, in this order, by the application's ``current_user``
(given to ``init_app``: Flask-Login, a session cookie, the host's own middleware), else
by RELAYLINE_AUTH: ``none`` (one anonymous user), ``token`` (relayline's own bearer
tokens) or ``jwt`` (an identity provider's bearer tokens). Nobody is a 401."""

from __future__ import annotations

from collections.abc import Callable

import werkzeug.exceptions
from flask import g, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import NotFound

from relayline.shared.auth import (
    INVALID_TOKEN,
    AuthError,
    KeysUnavailableError,
    checked_user,
    token_user,
)
from relayline.shared.errors import InputTranslationError, RefusalCode, UnavailableError
from relayline.shared.ids import invalid_thread_id, is_thread_id
from relayline.shared.jobs import ANONYMOUS
from relayline.shared.persistence import ThreadRecord
from relayline.shared.texts import thread_id_required, thread_not_found
from relayline.web.services import services

#: an application's answer to "who is asking" for the current request: the owner id
#: (a string), or None for nobody (401)
UserLoader = Callable[[], str | None]


def current_user() -> str:
    """The owner of this request (resolved once per request); 401 for nobody."""
    user: str | None = g.get("relayline_user")
    if user is None:
        user = g.relayline_user = _resolve()
    return user


def _resolve() -> str:
    svc = services()
    if svc.user_loader is not None:
        user = checked_user(svc.user_loader())
        if user is None:
            raise _unauthorized("Sign in first.", None, scheme=None)  # the host's own sign-in
        return user
    if svc.settings.auth == "none":
        return ANONYMOUS
    token = _bearer()
    try:
        if svc.identity is not None:
            return svc.identity.verify(token)
        return token_user(svc.settings.secret_key, token)
    except KeysUnavailableError as exc:
        raise UnavailableError(exc.message) from None
    except AuthError as exc:
        raise _unauthorized(exc.message, exc.code) from None


def _bearer() -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized(INVALID_TOKEN, "TOKEN_MISSING")
    return token.strip()


class Unauthorized(werkzeug.exceptions.Unauthorized):
    """A 401 with its refusal code (web.errors puts it in the body); the same class name
    as werkzeug's, which is the body's ``type``."""

    def __init__(self, message: str, code: RefusalCode | None, www: WWWAuthenticate | None) -> None:
        super().__init__(message, www_authenticate=www)
        self.refusal_code = code


def _unauthorized(
    message: str, code: RefusalCode | None, scheme: str | None = "Bearer"
) -> Unauthorized:
    """401 with ``message``; RFC 6750's challenge when a bearer token was expected."""
    www = None if scheme is None else WWWAuthenticate(scheme, {"error": "invalid_token"})
    return Unauthorized(message, code, www)


def check_thread_id(thread_id: object, field: str = "threadId") -> str:
    """``thread_id`` when it is one; a 400 otherwise, saying ``field`` (the body's name
    for it) is required when it is missing or empty."""
    if thread_id is None or thread_id == "":
        raise InputTranslationError(thread_id_required(field), code="THREAD_ID_REQUIRED")
    if not is_thread_id(thread_id):
        raise InputTranslationError(invalid_thread_id(thread_id), code="THREAD_ID_INVALID")
    return thread_id


def thread_for(
    thread_id: object, user: str, *, must_exist: bool = False, field: str = "threadId"
) -> ThreadRecord | None:
    """The thread if ``user`` may use it; None when it does not exist yet (a new thread).
    A thread of someone else is indistinguishable from a missing one. ``field``: the
    body's name for the id, for the refusal of a missing one."""
    checked = check_thread_id(thread_id, field)
    found = services().store.thread(checked)
    if (found is None and must_exist) or (found is not None and found.owner != user):
        raise NotFound(thread_not_found(checked))
    return found
