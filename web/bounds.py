"""Input bounds of every POST route, checked before anything is stored or enqueued.

A request past one of these is a 400 (``InputTranslationError``) with a message naming
the bound; a body past ``relayline.web.MAX_BODY_BYTES`` (1 MiB) is a 413 (web.body_limit).
Every string of a body is Unicode text (web.text_rules), and every id holds no control
character.
The worker refuses jobs past its own, looser bound (64 + 8 levels), so no request within
these reaches a worker it could crash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flask import request

from relayline.shared.errors import InputTranslationError, InvalidTextError
from relayline.shared.ids import MESSAGE_ID
from relayline.shared.jsonutil import depth
from relayline.web.text_rules import check_text, has_control

#: deepest nesting of arrays and objects in a body (the body itself is level 1)
MAX_DEPTH = 64
#: longest message, run, tool call or interrupt id, in characters (thread ids: 128 too,
#: shared.ids.THREAD_ID)
MAX_ID_CHARS = 128
#: most messages in one AG-UI or Vercel history
MAX_MESSAGES = 1000
#: largest single message, as compact JSON, in characters
MAX_MESSAGE_CHARS = 256 * 1024
#: largest AG-UI ``state``, as compact JSON, in characters
MAX_STATE_CHARS = 64 * 1024
#: largest arguments of one tool call (AG-UI ``function.arguments``, Vercel ``input``) and
#: largest tool result, as JSON text, in characters
MAX_TOOL_ARGUMENTS_CHARS = 64 * 1024


def json_body() -> dict[str, Any]:
    """The request's JSON object, within MAX_DEPTH, all of its text Unicode. Python's
    parser raises RecursionError (not ValueError) about 1,000 levels down, so that is a
    bad body too."""
    raw = request.get_data(cache=True)
    try:
        body = json.loads(raw, parse_constant=_refuse_constant) if raw else None
    except _NotJSONError as exc:
        raise InputTranslationError(str(exc)) from exc
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise InputTranslationError("The request body must be a JSON object.")
    check_depth(body)
    check_text(body)  # after the depth bound: the walk is iterative, but bounded too
    return body


class _NotJSONError(Exception):
    """A token Python's parser accepts but JSON does not have."""


def _refuse_constant(name: str) -> object:
    # json.loads takes NaN and Infinity, which nothing downstream can store or send.
    raise _NotJSONError(f"The request body holds {name}, which is not JSON.")


def check_depth(value: object, limit: int = MAX_DEPTH) -> None:
    """Refuse ``value`` nested deeper than ``limit``."""
    if depth(value, limit) > limit:
        raise InputTranslationError(f"The request body is nested more than {limit} levels.")


def _chars(value: object) -> int:
    # Within MAX_DEPTH, so json.dumps cannot overflow the stack.
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def check_size(value: object, limit: int, what: str) -> None:
    if _chars(value) > limit:
        raise InputTranslationError(f"{what} is larger than {limit} characters of JSON.")


def check_id(value: object, what: str, *, required: bool = False) -> str | None:
    """An id field: absent or null (unless ``required``), else a non-empty string of at
    most MAX_ID_CHARS without control characters (PostgreSQL refuses NUL in the columns
    and lookups ids go to; none belongs in an id)."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise InputTranslationError(f"{what} must be a non-empty string.")
    if len(value) > MAX_ID_CHARS:
        raise InputTranslationError(f"{what} is longer than {MAX_ID_CHARS} characters.")
    control = has_control(value)
    if control is not None:
        raise InvalidTextError(f"{what} holds a control character ({control}); ids may not.")
    return value


def check_new_message_id(messages: list[Any]) -> None:
    """The id of a new turn's message (the trailing user message), which is stored:
    at most 64 characters, as the agent requires (shared.ids.MESSAGE_ID), refused here
    rather than after the headers. Already an id (``check_id``); absent is generated."""
    if not messages or not isinstance(messages[-1], Mapping):
        return
    last = messages[-1]
    value = last.get("id")
    if last.get("role") == "user" and isinstance(value, str) and not MESSAGE_ID.match(value):
        raise InputTranslationError(
            f"'messages[{len(messages) - 1}].id' names the new message, which is stored: "
            "use at most 64 characters."
        )


def _messages(payload: Mapping[str, Any]) -> list[Any]:
    messages = payload.get("messages", [])
    if not isinstance(messages, list):
        raise InputTranslationError("'messages' must be a list.")
    if len(messages) > MAX_MESSAGES:
        raise InputTranslationError(f"'messages' holds more than {MAX_MESSAGES} messages.")
    for message in messages:
        if not isinstance(message, Mapping):
            raise InputTranslationError("Every 'messages' entry must be an object.")
        check_size(message, MAX_MESSAGE_CHARS, "A message")
    return messages


def _arguments(value: object, what: str) -> None:
    # Arguments arrive as a JSON string (AG-UI) or as JSON (Vercel): count either.
    chars = len(value) if isinstance(value, str) else _chars(value)
    if chars > MAX_TOOL_ARGUMENTS_CHARS:
        raise InputTranslationError(f"{what} is larger than {MAX_TOOL_ARGUMENTS_CHARS} characters.")


def check_agui(payload: Mapping[str, Any]) -> None:
    """An AG-UI ``RunAgentInput``: ids, history, state and tool arguments."""
    check_id(payload.get("runId"), "'runId'")
    if "state" in payload:
        check_size(payload["state"], MAX_STATE_CHARS, "'state'")
    messages = _messages(payload)
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        check_id(message.get("id"), f"'{where}.id'")
        check_id(message.get("toolCallId"), f"'{where}.toolCallId'")
        calls = message.get("toolCalls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise InputTranslationError(f"'{where}.toolCalls' must be a list.")
        for number, call in enumerate(calls):
            if not isinstance(call, Mapping):
                raise InputTranslationError("Every 'toolCalls' entry must be an object.")
            check_id(call.get("id"), f"'{where}.toolCalls[{number}].id'")
            function = call.get("function")
            if isinstance(function, Mapping) and "arguments" in function:
                _arguments(function["arguments"], "A tool call's arguments")
    check_new_message_id(messages)
    resume = payload.get("resume")
    if isinstance(resume, list):
        for index, entry in enumerate(resume):
            if isinstance(entry, Mapping):
                check_id(entry.get("interruptId"), f"'resume[{index}].interruptId'")
                if "payload" in entry:
                    _arguments(entry["payload"], "A resume entry's payload")


def check_vercel(payload: Mapping[str, Any]) -> None:
    """A Vercel ``useChat`` body: ids, history, and each tool part's input and output."""
    messages = _messages(payload)
    for index, message in enumerate(messages):
        check_id(message.get("id"), f"'messages[{index}].id'")
        parts = message.get("parts", [])
        if not isinstance(parts, list):
            raise InputTranslationError(f"'messages[{index}].parts' must be a list.")
        for number, part in enumerate(parts):
            if not isinstance(part, Mapping):
                raise InputTranslationError("Every 'parts' entry must be an object.")
            check_id(part.get("toolCallId"), f"'messages[{index}].parts[{number}].toolCallId'")
            for key in ("input", "output"):
                if key in part:
                    _arguments(part[key], f"A tool part's {key!r}")
    check_new_message_id(messages)


def check_answers(payload: Mapping[str, Any]) -> None:
    """A native tool-results or approvals body (call id -> answer): ids and sizes."""
    for call_id, value in payload.items():
        check_id(call_id, f"The call id {call_id!r}")
        _arguments(value, f"The answer to call {call_id!r}")
