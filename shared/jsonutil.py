"""Compact JSON used on every wire path and in the database."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

#: a free-form JSON object (a JSON schema, a tool's inputs, a client's state): where the
#: shape is known, a TypedDict names it instead
JSONObject: TypeAlias = dict[str, Any]

# One encoder: json.dumps with options builds a new encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON with UTF-8 kept verbatim; NaN and infinities are refused (not JSON)."""
    return _ENCODER.encode(value)


def normalize_result(value: Any) -> str:
    """Tool result text the model sees: strings stay as they are, anything else is JSON."""
    return value if isinstance(value, str) else dumps(value)


def depth(value: object, limit: int) -> int:
    """The nesting depth of arrays and objects in ``value`` (a bare scalar is 0, ``[]``
    is 1), counted without recursion and no further than ``limit + 1``: all a bound needs,
    and no value is too deep to count."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Any
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest
