"""Validation of client tool catalogs: which JSON schemas a frontend tool may declare.

The subset is the one the reference's tool property types can represent
(docs/reference/neuron-streaming-spec.md section 6.5): objects whose properties
recurse, arrays with one ``items`` schema, the scalar types with ``enum``, and
nullability as ``["<type>", "null"]``. That is what
CopilotKit's zod schemas produce for objects, arrays, optional fields (absent from
``required``) and nullable scalars. Unions, references and tuples are refused
rather than guessed at, so a model never sees a schema the backend cannot describe.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from relayline.shared.errors import InputTranslationError

SUPPORTED_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})
"""Property types a frontend tool may use; a property without ``type`` is a string."""

UNREPRESENTABLE_KEYWORDS = ("$ref", "oneOf", "anyOf", "allOf", "prefixItems")
"""Keywords with no equivalent in the supported subset (zod unions, refs, tuples)."""

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is an int subclass in Python
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


class _UnsupportedSchema(Exception):
    """Internal: one reason the schema is outside the subset; wrapped with the tool name."""


def check_parameters(tool_name: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a tool's ``parameters`` schema and return a private copy of it.

    Raises InputTranslationError "Frontend tool '<name>' declares unsupported
    parameters: <detail>" for anything outside the supported subset.
    """
    try:
        declared = parameters.get("type")
        # FrontendTool takes arguments as one object, whatever the client declares.
        if declared is not None and declared != "object":
            raise _UnsupportedSchema("The parameters schema must be of type 'object'.")
        _check_object(parameters)
    except _UnsupportedSchema as exc:
        raise InputTranslationError(
            f"Frontend tool '{tool_name}' declares unsupported parameters: {exc}"
        ) from None
    # A copy, so later edits to the request body cannot change a declared tool.
    return copy.deepcopy(dict(parameters))


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error details."""
    if value is None:
        return "null"
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def _check_object(schema: Mapping[str, Any]) -> None:
    _assert_representable(schema)
    _keyword(schema, "required", "array", "the schema")
    properties = _keyword(schema, "properties", "object", "the schema") or {}
    for name, definition in properties.items():
        if not isinstance(definition, Mapping):
            raise _UnsupportedSchema(
                f"Property '{name}' must be defined by a schema object, "
                f"{json_type(definition)} given."
            )
        _check_property(name, definition)


def _check_property(name: str, schema: Mapping[str, Any]) -> None:
    _assert_representable(schema)
    declared = schema.get("type")
    kind: Any = "string" if declared is None else declared
    if isinstance(kind, list):
        # ["string", "null"] is how zod spells a nullable scalar; a real union is not.
        non_null = [t for t in kind if t != "null"]
        if len(non_null) != 1:
            raise _UnsupportedSchema(f"Property '{name}' must declare one non-null type.")
        kind = non_null[0]
    if not isinstance(kind, str):
        raise _UnsupportedSchema(
            f"Property '{name}' must declare its type as a string, {json_type(kind)} given."
        )
    if kind not in SUPPORTED_TYPES:
        raise _UnsupportedSchema(f"Unsupported type '{kind}' for property '{name}'.")
    owner = f"property '{name}'"
    _keyword(schema, "description", "string", owner)
    if kind == "object":
        _check_object(schema)
    elif kind == "array":
        _check_array(name, schema)
    else:
        _keyword(schema, "enum", "array", owner)


def _check_array(name: str, schema: Mapping[str, Any]) -> None:
    owner = f"property '{name}'"
    items = schema.get("items")
    if isinstance(items, list):
        # Draft-4 style tuples: one schema per position cannot become one item property.
        raise _UnsupportedSchema(
            "Tuple schemas cannot be represented by a single array item property."
        )
    if items is not None:
        _keyword(schema, "items", "object", owner)
        _check_property(f"{name}_item", items)
    low = _keyword(schema, "minItems", "integer", owner)
    high = _keyword(schema, "maxItems", "integer", owner)
    if low is not None and low < 0:
        raise _UnsupportedSchema(f"minItems must be >= 0, got {low}")
    if high is not None and high < 0:
        raise _UnsupportedSchema(f"maxItems must be >= 0, got {high}")
    if low is not None and high is not None and low > high:
        raise _UnsupportedSchema(f"minItems ({low}) cannot be greater than maxItems ({high})")


def _assert_representable(schema: Mapping[str, Any]) -> None:
    for keyword in UNREPRESENTABLE_KEYWORDS:
        if schema.get(keyword) is not None:
            raise _UnsupportedSchema(
                f"JSON Schema keyword '{keyword}' cannot be represented by the tool property types."
            )


def _keyword(schema: Mapping[str, Any], keyword: str, expected: str, owner: str) -> Any:
    """An optional keyword's value (null counts as absent), refusing the wrong JSON type."""
    value = schema.get(keyword)
    if value is not None and json_type(value) != expected:
        raise _UnsupportedSchema(
            f"Keyword '{keyword}' of {owner} must be of type {expected}, {json_type(value)} given."
        )
    return value
