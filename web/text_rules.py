"""Text every store and wire takes, checked once over a parsed body before anything runs.

JSON may spell a lone UTF-16 surrogate (``"\\ud800"``) and Python's parser keeps it, but
such a string is not Unicode text: UTF-8 cannot encode it, so the database, the broker and
the job's Redis keys all refuse it, some of them only in the worker after the response
began. ``check_text`` walks the whole body (keys too) and refuses one with a 400 naming
the field. Control characters are refused in ids only (``has_control``): PostgreSQL
refuses NUL in the text columns and lookups ids go to, while free text travels as JSON,
where a NUL is an escape like any other.
"""

from __future__ import annotations

import json
import re
from typing import TypeAlias

from relayline.shared.errors import InvalidTextError

#: a lone surrogate: Python's str holds one only when it was never paired
_SURROGATE = re.compile("[\ud800-\udfff]")
#: C0, DEL and C1 control characters (Unicode category Cc)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: a key shown as ``.name`` in a field path; any other is shown quoted, ``["..."]``
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: characters of a quoted key shown in a message
_SHOWN_KEY = 40

#: where a value sits in a body: its key or index, then its parent's path (None: the body)
FieldPath: TypeAlias = "tuple[str | int, FieldPath | None]"


def check_text(body: object) -> None:
    """Refuse ``body`` (parsed JSON, within the nesting bound) when any string in it,
    a key or a value, holds a lone surrogate."""
    stack: list[tuple[object, FieldPath | None]] = [(body, None)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            _check_string(value, path, key=False)
        elif isinstance(value, dict):
            for key, child in value.items():
                step: FieldPath = (key, path)
                _check_string(key, step, key=True)
                stack.append((child, step))
        elif isinstance(value, list):
            stack.extend((child, (index, path)) for index, child in enumerate(value))


def _check_string(text: str, path: FieldPath | None, *, key: bool) -> None:
    if text.isascii():
        return
    found = _SURROGATE.search(text)
    if found is None:
        return
    code = f"U+{ord(found.group()):04X}"
    if key:
        parent = path[1] if path else None
        where = f"A key of {field_name(parent)}" if parent else "A key of the body"
    else:
        where = field_name(path)
    raise InvalidTextError(
        f"{where} is not valid Unicode text: it holds a lone surrogate ({code}) at "
        f"character {found.start()}."
    )


def has_control(text: str) -> str | None:
    """The first control character in ``text`` (as ``U+XXXX``), or None."""
    found = _CONTROL.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def field_name(path: FieldPath | None) -> str:
    """``path`` as the field a message names: ``'messages[0].content'``."""
    steps: list[str | int] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    shown = ""
    for step in reversed(steps):
        if isinstance(step, int):
            shown += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step):
            shown += f".{step}" if shown else step
        else:
            # ASCII-escaped, so a control character or a surrogate in a key cannot
            # break the message or the log line that carries it.
            quoted = json.dumps(step[:_SHOWN_KEY], ensure_ascii=True)
            shown += f"[{quoted}]"
    return f"'{shown}'" if shown else "the body"
