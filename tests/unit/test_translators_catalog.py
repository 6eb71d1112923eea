"""AG-UI tool catalogs and their JSON schemas (reference 6.5 "Catalog conversion").

Unit level on purpose: ``tools()`` is pure, and these schemas are the shapes
CopilotKit sends for zod tool parameters (zod-to-json-schema output).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from relayline.shared.errors import InputTranslationError
from relayline.shared.protocols.agui.catalog import check_parameters
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.tools import FrontendTool

tools = AGUIInputTranslator.tools
REQUIRED = "An AG-UI tool requires name, description and parameters."

# z.object({title: z.string().describe(...), tags: z.array(z.string()).min(1).optional(),
#   style: z.object({color: z.enum([...]), size: z.number().nullable()}),
#   rows: z.array(z.object({id: z.number().int(), done: z.boolean()})).max(20),
#   note: z.string().nullable().optional()})
ZOD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "Card title"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "style": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "green"]},
                "size": {"type": ["number", "null"]},
            },
            "required": ["color", "size"],
            "additionalProperties": False,
        },
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "done": {"type": "boolean"}},
                "required": ["id", "done"],
                "additionalProperties": False,
            },
            "maxItems": 20,
        },
        "note": {"type": ["string", "null"]},
        "free": {"description": "no type means string"},
    },
    "required": ["title", "style", "rows"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}


def tool_def(name: str = "addCard", parameters: Any = None, **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {}} if parameters is None else parameters
    return {"name": name, "description": f"{name} tool", "parameters": schema, **extra}


def with_property(prop: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": prop}}


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def test_catalog_creates_schema_tools_in_order() -> None:
    catalog = {"tools": [tool_def("addCard", ZOD_SCHEMA), tool_def("readTitle")]}
    built = tools(catalog)
    assert [t.name for t in built] == ["addCard", "readTitle"]
    assert all(isinstance(t, FrontendTool) and t.deferred for t in built)
    assert built[0].description == "addCard tool"
    assert built[0].input_schema == ZOD_SCHEMA
    assert built[0].requires_approval is False  # the application decides, not the client


def test_declared_schema_is_a_private_copy() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    built = tools({"tools": [tool_def("search", schema)]})
    schema["properties"]["q"]["type"] = "integer"
    assert built[0].input_schema["properties"]["q"]["type"] == "string"


@pytest.mark.parametrize("payload", [{}, {"tools": []}])
def test_empty_or_missing_catalog(payload: dict[str, Any]) -> None:
    assert tools(payload) == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"tools": None}, "'tools' must be a list."),
        ({"tools": {"addCard": tool_def()}}, "'tools' must be a list."),
        ({"tools": ["addCard"]}, "Every 'tools' entry must be an object."),
        ({"tools": [{"description": "d", "parameters": {}}]}, REQUIRED),
        ({"tools": [tool_def("")]}, REQUIRED),
        ({"tools": [tool_def(description=None)]}, REQUIRED),
        ({"tools": [{"name": "a", "description": "d"}]}, REQUIRED),
        ({"tools": [tool_def(parameters=[])]}, REQUIRED),
        ({"tools": [tool_def(parameters="{}")]}, REQUIRED),
        ({"tools": [tool_def("a"), tool_def("a")]}, "Duplicate frontend tool 'a'."),
    ],
)
def test_invalid_definitions(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        tools(payload)


def test_backend_name_collision_is_a_client_error() -> None:
    with pytest.raises(
        InputTranslationError, match=exactly("Frontend tool 'search' collides with a backend tool.")
    ):
        tools({"tools": [tool_def("search")]}, backend_tool_names={"search", "delete_file"})
    assert [t.name for t in tools({"tools": [tool_def("lookup")]}, backend_tool_names=["search"])]


def test_tool_name_outside_provider_syntax_is_a_client_error() -> None:
    with pytest.raises(InputTranslationError, match="Invalid tool name"):
        tools({"tools": [tool_def("add card")]})


UNSUPPORTED: list[tuple[Any, str]] = [
    ({"$ref": "#/definitions/value"}, "JSON Schema keyword '$ref' cannot be represented"),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "JSON Schema keyword 'oneOf' cannot"),
    # zod .nullable() on an object: an anyOf with null is still a union here
    (
        {"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]},
        "JSON Schema keyword 'anyOf' cannot",
    ),
    ({"allOf": [{"type": "object"}]}, "JSON Schema keyword 'allOf' cannot"),
    (
        {"type": "array", "prefixItems": [{"type": "string"}]},
        "JSON Schema keyword 'prefixItems' cannot",
    ),
    (
        {"type": "array", "items": [{"type": "string"}]},
        "Tuple schemas cannot be represented by a single array item property.",
    ),
    ({"type": ["string", "integer"]}, "Property 'value' must declare one non-null type."),
    ({"type": ["null"]}, "Property 'value' must declare one non-null type."),
    ({"type": "null"}, "Unsupported type 'null' for property 'value'."),
    ({"type": "date"}, "Unsupported type 'date' for property 'value'."),
    ({"type": 5}, "Property 'value' must declare its type as a string, integer given."),
    ("string", "Property 'value' must be defined by a schema object, string given."),
    ({"type": "array", "items": "string"}, "Keyword 'items' of property 'value' must be"),
    ({"type": "array", "items": {"$ref": "#/x"}}, "JSON Schema keyword '$ref' cannot"),
    (
        {"type": "array", "items": {"type": "bogus"}},
        "Unsupported type 'bogus' for property 'value_item'.",
    ),
    ({"type": "array", "minItems": -1}, "minItems must be >= 0, got -1"),
    ({"type": "array", "maxItems": -2}, "maxItems must be >= 0, got -2"),
    ({"type": "array", "minItems": 3, "maxItems": 1}, "minItems (3) cannot be greater than"),
    ({"type": "array", "minItems": "1"}, "Keyword 'minItems' of property 'value' must be"),
    ({"type": "string", "enum": "red"}, "Keyword 'enum' of property 'value' must be"),
    ({"type": "string", "description": 5}, "Keyword 'description' of property 'value' must be"),
    ({"type": "object", "properties": "a"}, "Keyword 'properties' of the schema must be"),
    ({"type": "object", "required": "a"}, "Keyword 'required' of the schema must be"),
    (
        {
            "type": "object",
            "properties": {
                "inner": {"type": "object", "properties": {"leaf": {"anyOf": []}}},
            },
        },
        "JSON Schema keyword 'anyOf' cannot",
    ),
]


@pytest.mark.parametrize(("prop", "detail"), UNSUPPORTED)
def test_unsupported_property_schemas(prop: Any, detail: str) -> None:
    prefix = "Frontend tool 'addCard' declares unsupported parameters: "
    with pytest.raises(InputTranslationError, match="^" + re.escape(prefix + detail)):
        tools({"tools": [tool_def("addCard", with_property(prop))]})


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        ({"type": "string"}, "The parameters schema must be of type 'object'."),
        ({"anyOf": [{"type": "object"}]}, "JSON Schema keyword 'anyOf' cannot be represented"),
        ({"type": "object", "required": "q"}, "Keyword 'required' of the schema must be"),
    ],
)
def test_unsupported_top_level_schemas(schema: dict[str, Any], detail: str) -> None:
    prefix = "Frontend tool 'q' declares unsupported parameters: "
    with pytest.raises(InputTranslationError, match="^" + re.escape(prefix + detail)):
        check_parameters("q", schema)


@pytest.mark.parametrize(
    "prop",
    [
        {"type": ["string", "null"]},
        {"type": ["null", "integer"], "description": "nullable count"},
        {"type": "string", "enum": ["a", "b"]},
        {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        {"type": "array", "minItems": 0, "maxItems": 0},
        {"type": "object"},
        {"type": "string", "const": "fixed", "default": "fixed"},
        {},
    ],
)
def test_supported_property_schemas(prop: Any) -> None:
    schema = with_property(prop)
    assert check_parameters("q", schema) == schema
