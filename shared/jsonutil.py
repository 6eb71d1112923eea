"""Compact JSON used on every wire path and in the database."""

from __future__ import annotations

import json
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
