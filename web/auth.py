"""Who is asking, and whether the thread is theirs. Anyone but the owner gets 404."""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import NotFound, Unauthorized

from shared.auth import verify_token
from shared.errors import InputTranslationError
from shared.ids import invalid_thread_id, is_thread_id
from shared.jobs import ANONYMOUS
from shared.persistence import ThreadRecord
from shared.texts import thread_not_found
from web.services import services


def current_user() -> str:
    settings = services().settings
    if settings.auth == "none":
        return ANONYMOUS
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    user = verify_token(settings.secret_key, token.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        raise Unauthorized("A valid 'Authorization: Bearer <token>' header is required.")
    return user


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
