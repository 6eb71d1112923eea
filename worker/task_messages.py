"""What makes a message a task a worker can run, checked before Celery's strategy sees it.

Celery's strategy trusts a message's shape: a body that is JSON but not
``[args, kwargs, embed]`` (``{"a":1}``, ``[1]``, ``null``) raised in the worker's main
process and ended it ("Unrecoverable error"), the message went back on the queue, and
every worker that took it died too. ``refusal`` says, in order and without raising, why
a message cannot run: headers (``not-task-shape``, ``bad-headers``, ``unknown-task``),
then the body (``too-large`` before decoding it, ``undecodable``, ``not-task-shape``,
``too-deep``), then whether the arguments fit the task (``bad-arguments``).

Only Celery's message protocol 2 is runnable (what every Celery since 4.0 sends, and
all relayline sends): a message without a ``task`` header, as protocol 1 had, is
``not-task-shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celery.utils.time import maybe_iso8601
from kombu.message import Message

from relayline.shared.jsonutil import depth
from relayline.worker.dead_letter import Refusal

#: the web's nesting bound on client values (64) plus the levels a job puts above them
#: ([args, kwargs] -> kwargs -> job -> seed -> messages -> message: 6) and slack
MAX_DEPTH = 64 + 8
#: a job carries a turn's seed, never the thread: far below this
MAX_BODY_BYTES = 4 * 1024 * 1024

#: headers Celery reads in the worker's main process, each with what it must be
_OPTIONAL_TEXT = ("shadow", "root_id", "parent_id", "group", "argsrepr", "kwargsrepr")
_DATES = ("eta", "expires")
#: what the embed (third) element of a body may hold, each key optional or null
_EMBED_LISTS = ("callbacks", "errbacks", "chain")


def task_of(message: Message) -> tuple[str | None, str | None]:
    """The task name and id a message's headers give, when they are text."""
    headers: object = message.headers
    if not isinstance(headers, dict):
        return None, None
    name, task_id = headers.get("task"), headers.get("id")
    return (
        name if isinstance(name, str) else None,
        task_id if isinstance(task_id, str) else None,
    )


def refusal(message: Message, tasks: Mapping[str, Any]) -> Refusal | None:
    """Why ``message`` cannot run on a worker whose tasks are ``tasks``, or None.
    Decodes the body (kombu keeps it, so Celery does not decode it again)."""
    headers: object = message.headers
    if not isinstance(headers, dict) or "task" not in headers:
        return Refusal("not-task-shape", "no task header (not a Celery protocol 2 task message)")
    wrong = _header_fault(headers)
    if wrong is not None:
        return Refusal("bad-headers", wrong)
    name = headers["task"]
    if name not in tasks:
        return Refusal("unknown-task", f"no task named {name!r} on this worker")
    size = len(message.body or b"")
    if size > MAX_BODY_BYTES:
        return Refusal("too-large", f"body of {size} bytes exceeds {MAX_BODY_BYTES}")
    try:
        body = message.decode()
    except Exception as exc:  # kombu's DecodeError, ContentDisallowed, RecursionError, ...
        return Refusal("undecodable", f"{type(exc).__name__}: {str(exc)[:200]}")
    wrong = _shape_fault(body)
    if wrong is not None:
        return Refusal("not-task-shape", wrong)
    args, kwargs, _ = body
    bounds = bounds_refusal(size, args, kwargs)
    if bounds is not None:
        return bounds
    return _arguments_refusal(tasks[name], args, kwargs)


def bounds_refusal(body_size: int, args: object, kwargs: object) -> Refusal | None:
    """Why a decoded job is out of bounds (size, nesting), or None."""
    if body_size > MAX_BODY_BYTES:
        return Refusal("too-large", f"body of {body_size} bytes exceeds {MAX_BODY_BYTES}")
    if depth([args, kwargs], MAX_DEPTH) > MAX_DEPTH:
        return Refusal("too-deep", f"nesting depth exceeds {MAX_DEPTH}")
    return None


def _header_fault(headers: dict[str, Any]) -> str | None:
    for key in ("task", "id"):
        if not isinstance(headers.get(key), str) or not headers[key]:
            return f"header {key!r} is not a non-empty string: {headers.get(key)!r:.100}"
    for key in _OPTIONAL_TEXT:
        if not isinstance(headers.get(key), str | None):
            return f"header {key!r} is not a string: {headers[key]!r:.100}"
    for key in _DATES:
        value = headers.get(key)
        if value is None:
            continue
        try:
            maybe_iso8601(value)
        except (AttributeError, ValueError, TypeError, OverflowError):
            return f"header {key!r} is not an ISO 8601 time: {value!r:.100}"
    limits = headers.get("timelimit")
    if limits is not None and not (
        isinstance(limits, list | tuple) and len(limits) == 2 and all(map(_seconds, limits))
    ):
        return f"header 'timelimit' is not [hard, soft] seconds: {limits!r:.100}"
    retries = headers.get("retries", 0)
    if not isinstance(retries, int) or isinstance(retries, bool):
        return f"header 'retries' is not an integer: {retries!r:.100}"
    if not isinstance(headers.get("ignore_result"), bool | None):
        return f"header 'ignore_result' is not a boolean: {headers['ignore_result']!r:.100}"
    return None


def _seconds(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _shape_fault(body: object) -> str | None:
    if not isinstance(body, list | tuple) or len(body) != 3:
        return f"body is not [args, kwargs, embed]: {_excerpt(body)}"
    args, kwargs, embed = body
    if not isinstance(args, list | tuple):
        return f"args is not an array: {_excerpt(args)}"
    if not isinstance(kwargs, dict) or not all(isinstance(key, str) for key in kwargs):
        return f"kwargs is not an object: {_excerpt(kwargs)}"
    if not isinstance(embed, dict):
        return f"embed is not an object: {_excerpt(embed)}"
    for key in _EMBED_LISTS:
        if not isinstance(embed.get(key), list | None):
            return f"embed {key!r} is not an array: {_excerpt(embed[key])}"
    if not isinstance(embed.get("chord"), dict | None):
        return f"embed 'chord' is not an object: {_excerpt(embed['chord'])}"
    return None


def _arguments_refusal(task: Any, args: list[Any], kwargs: dict[str, Any]) -> Refusal | None:
    """The task's own parameters, as Celery's ``check_arguments`` binds them when sending."""
    header: Callable[..., object] | None = getattr(task, "__header__", None)
    if header is None:
        return None
    try:
        header(*args, **kwargs)
    except TypeError as exc:
        return Refusal("bad-arguments", str(exc))
    return None


def _excerpt(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + "..."
