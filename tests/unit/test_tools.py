"""``@tool``, ``Tool``, ``FrontendTool``, ``type_schema`` and ``redacted_inputs``
(docs/DESIGN.md section 6)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Optional

import pytest

from relayline.shared.errors import ToolError
from relayline.shared.tools import FrontendTool, Tool, redacted_inputs, tool, type_schema


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b (int): The second number,
            added to the first.

    Returns:
        The sum.
    """
    return a + b


@tool(name="remove_file", description="Remove it.", requires_approval=True, redact=["token"])
def delete_file(path: str, token: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def test_bare_decorator_builds_a_tool_from_name_docstring_and_hints() -> None:
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.requires_approval is False
    assert add.redact == ()
    assert add.deferred is False
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {
                "type": "integer",
                "description": "The second number, added to the first.",
                "default": 2,
            },
        },
        "required": ["a"],
    }


def test_decorator_with_options() -> None:
    assert isinstance(delete_file, Tool)
    assert delete_file.name == "remove_file"
    assert delete_file.description == "Remove it."
    assert delete_file.requires_approval is True
    assert delete_file.redact == ("token",)
    assert delete_file.input_schema["required"] == ["path", "token"]


def test_tool_stays_callable_and_executes_with_inputs() -> None:
    assert add(1) == 3
    assert add(1, b=5) == 6
    assert add.execute({"a": 4, "b": 1}) == 5
    assert delete_file.execute({"path": "x.pdf", "token": "t"}) == "deleted x.pdf"


def test_multi_line_summary_is_joined_and_body_excluded() -> None:
    @tool
    def lookup(query: str) -> str:
        """Look something up
        in the index.

        Longer body text that is not part of the summary.

        Args:
            query: What to find.
        """
        return query

    assert lookup.description == "Look something up in the index."
    assert lookup.input_schema["properties"]["query"] == {
        "type": "string",
        "description": "What to find.",
    }


def test_function_without_docstring_has_empty_description() -> None:
    @tool
    def bare(flag: bool) -> bool:
        return flag

    assert bare.description == ""
    assert bare.input_schema == {
        "type": "object",
        "properties": {"flag": {"type": "boolean"}},
        "required": ["flag"],
    }


def test_no_parameters_gives_empty_object_without_required() -> None:
    @tool
    def now() -> str:
        """Current time."""
        return "noon"

    assert now.input_schema == {"type": "object", "properties": {}}


def test_schema_from_every_supported_hint() -> None:
    @tool
    def everything(
        s: str,
        i: int,
        f: float,
        b: bool,
        maybe: Optional[str],  # noqa: UP045 - the typing spelling must work too
        maybe_int: int | None,
        nums: list[int],
        mode: Literal["fast", "slow"],
        options: dict[str, Any],
        point: Point,
        limit: int = 10,
        label: str | None = None,
    ) -> None:
        """Everything."""

    props = everything.input_schema["properties"]
    assert props["s"] == {"type": "string"}
    assert props["i"] == {"type": "integer"}
    assert props["f"] == {"type": "number"}
    assert props["b"] == {"type": "boolean"}
    assert props["maybe"] == {"type": ["string", "null"]}
    assert props["maybe_int"] == {"type": ["integer", "null"]}
    assert props["nums"] == {"type": "array", "items": {"type": "integer"}}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert props["options"] == {"type": "object"}
    assert props["point"] == {
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["x"],
    }
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["label"] == {"type": ["string", "null"], "default": None}
    assert everything.input_schema["required"] == [
        "s",
        "i",
        "f",
        "b",
        "maybe",
        "maybe_int",
        "nums",
        "mode",
        "options",
        "point",
    ]


def test_type_schema_directly() -> None:
    assert type_schema(Any) == {}
    assert type_schema(list) == {"type": "array", "items": {}}
    assert type_schema(dict) == {"type": "object"}
    assert type_schema(Literal[1, 2]) == {"enum": [1, 2], "type": "integer"}
    assert type_schema(Literal["a", 1]) == {"enum": ["a", 1]}
    assert type_schema(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    with pytest.raises(TypeError, match="Unsupported tool parameter type"):
        type_schema(complex)


def test_missing_hint_is_rejected() -> None:
    def untyped(a: int, b) -> int:  # type: ignore[no-untyped-def]
        return a

    with pytest.raises(TypeError, match="parameter 'b' needs a type hint"):
        tool(untyped)


@pytest.mark.parametrize("star", ["args", "kwargs"])
def test_var_args_are_rejected(star: str) -> None:
    def with_args(*args: int) -> None: ...

    def with_kwargs(**kwargs: int) -> None: ...

    fn = with_args if star == "args" else with_kwargs
    with pytest.raises(TypeError, match=r"cannot take \*args or \*\*kwargs"):
        tool(fn)


@pytest.mark.parametrize("name", ["", "1abc", "has space", "a/b", "x" * 65, "héllo"])
def test_invalid_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="Invalid tool name"):
        FrontendTool(name)
    with pytest.raises(ValueError, match="Invalid tool name"):
        Tool(name, "", {"type": "object", "properties": {}}, fn=lambda: None)


def test_decorator_rejects_an_invalid_name() -> None:
    def fn() -> None: ...

    with pytest.raises(ValueError, match="Invalid tool name"):
        tool(name="not valid")(fn)


@pytest.mark.parametrize("name", ["a", "_x", "read.title-2", "x" * 64])
def test_valid_names_are_accepted(name: str) -> None:
    assert FrontendTool(name).name == name


def test_frontend_tool_defaults_and_execute_raises() -> None:
    read_title = FrontendTool("read_title", "Read the page title")
    assert read_title.deferred is True
    assert read_title.description == "Read the page title"
    assert read_title.input_schema == {"type": "object", "properties": {}}
    assert read_title.requires_approval is False
    with pytest.raises(ToolError) as caught:
        read_title.execute({})
    assert str(caught.value) == (
        'Tool "read_title" requires external execution: '
        "submit its result instead of executing it on the backend."
    )
    assert caught.value.message == str(caught.value)


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "array"}, []])
def test_frontend_tool_needs_an_object_schema(schema: Any) -> None:
    with pytest.raises(ValueError, match="needs an object input_schema"):
        FrontendTool("pick", "Pick", schema)


def test_frontend_tool_accepts_an_object_schema() -> None:
    schema = {"type": "object", "properties": {"color": {"type": "string"}}}
    assert FrontendTool("pick", "Pick", schema).input_schema == schema


def test_redacted_inputs_masks_listed_keys_only() -> None:
    inputs = {"path": "a.pdf", "token": "secret", "count": 3}
    assert redacted_inputs(inputs, ["token", "absent"]) == {
        "path": "a.pdf",
        "token": "***",
        "count": 3,
    }
    assert inputs["token"] == "secret"
    assert redacted_inputs(inputs, ()) == inputs


def test_name_with_trailing_newline_is_rejected() -> None:
    with pytest.raises(ValueError, match="Invalid tool name"):
        FrontendTool("abc\n")


def test_optional_literal_admits_null_in_enum() -> None:
    assert type_schema(Optional[Literal["a", "b"]]) == {  # noqa: UP045
        "enum": ["a", "b", None],
        "type": ["string", "null"],
    }


def test_docstring_continuation_line_with_a_colon_stays_with_its_parameter() -> None:
    @tool
    def fetch(url: str, retries: int = 1) -> str:
        """Fetch a page.

        Args:
            url: The page to fetch,
                default: the home page.
            retries: How often to retry.
        """
        return url

    props = fetch.input_schema["properties"]
    assert props["url"]["description"] == "The page to fetch, default: the home page."
    assert props["retries"]["description"] == "How often to retry."
    assert "default" not in props
