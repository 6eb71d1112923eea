"""Who is asking, and whether the thread is theirs. Anyone but the owner gets 404.

The owner of a request is decided, in this order, by the application's ``current_user``
(given to ``init_app``: Flask-Login, a session cookie, the host's own middleware), else
by RELAYLINE_AUTH: ``none`` (one anonymous user), ``token`` (relayline's own bearer
tokens) or ``jwt`` (an identity provider's bearer tokens). Nobody is a 401."""

from __future__ import annotations

from collections.abc import Callable

from flask import g, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import NotFound, Unauthorized

from relayline.shared.auth import AuthError, KeysUnavailableError, checked_user, verify_token
from relayline.shared.errors import InputTranslationError, UnavailableError
from relayline.shared.ids import invalid_thread_id, is_thread_id
from relayline.shared.jobs import ANONYMOUS
from relayline.shared.persistence import ThreadRecord
from relayline.shared.texts import thread_not_found
from relayline.web.services import services

#: an application's answer to "who is asking" for the current request: the owner id
#: (a string), or None for nobody (401)
UserLoader = Callable[[], str | None]

_BEARER = "A valid 'Authorization: Bearer <token>' header is required."


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
            raise _unauthorized("Sign in first.", scheme=None)
        return user
    if svc.settings.auth == "none":
        return ANONYMOUS
    token = _bearer()
    if svc.identity is not None:
        try:
            return svc.identity.verify(token)
        except KeysUnavailableError as exc:
            raise UnavailableError(exc.message) from None
        except AuthError as exc:
            raise _unauthorized(exc.message) from None
    user = verify_token(svc.settings.secret_key, token)
    if user is None:
        raise _unauthorized(_BEARER)
    return user


def _bearer() -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized(_BEARER)
    return token.strip()


def _unauthorized(message: str, scheme: str | None = "Bearer") -> Unauthorized:
    """401 with ``message``; RFC 6750's challenge when a bearer token was expected."""
    www = None if scheme is None else WWWAuthenticate(scheme, {"error": "invalid_token"})
    return Unauthorized(message, www_authenticate=www)


def check_thread_id(thread_id: object) -> str:
    if not is_thread_id(thread_id):
        raise InputTranslationError(invalid_thread_id(thread_id))
    return thread_id


def thread_for(thread_id: object, user: str, *, must_exist: bool = False) -> ThreadRecord | None:
    """The thread if ``user`` may use it; None when it does not exist yet (a new thread).
    A thread of someone else is indistinguishable from a missing one."""
    checked = check_thread_id(thread_id)
    found = services().store.thread(checked)
    if (found is None and must_exist) or (found is not None and found.owner != user):
        raise NotFound(thread_not_found(checked))
    return found
