"""Tools: backend tools built by ``@tool`` and frontend tool declarations.

``@tool`` reads the JSON schema of a function's parameters from its type hints and
the parameter descriptions from its Google-style docstring. ``FrontendTool`` is a
declaration only: the browser runs it, and executing it here is an error.

A long backend tool may opt in to stopping with its run: ``current_stop_signal()`` is the
run's ``StopSignal`` while the tool executes (check ``is_set()``, ``wait(seconds)``
instead of sleeping, or ``on_stop`` to abort I/O). A tool that ignores it finishes,
and its result is kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, get_args, get_origin, get_type_hints

from relayline.shared.errors import ToolError
from relayline.shared.stop_signal import StopSignal

JSONSchema = dict[str, Any]
#: what a backend tool's exception does (``Tool.on_error``)
ToolErrorPolicy = Literal["model", "fail"]
TOOL_ERROR_POLICIES: tuple[ToolErrorPolicy, ...] = ("model", "fail")


class FrontendToolJSON(typing.TypedDict, total=False):
    """A frontend tool declaration on the wire (jobs, run records): AG-UI's tool shape."""

    name: typing.Required[str]
    description: str
    parameters: JSONSchema
    requiresApproval: bool


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"Invalid tool name {name!r}: use letters, digits, '_', '.', '-' (at most 64)."
        )


@dataclasses.dataclass(frozen=True)
class Tool:
    """A backend tool: ``fn`` runs in the worker with the model's arguments."""

    name: str
    description: str
    input_schema: JSONSchema
    fn: Callable[..., Any]
    requires_approval: bool = False
    #: argument names whose values are never published (see ``redacted_inputs``)
    redact: tuple[str, ...] = ()
    #: safe to run again when a worker was lost while it ran (else the interrupted call
    #: is settled with ``relayline.shared.agent.loop.INTERRUPTED_ERROR``, never re-run)
    idempotent: bool = False
    #: what an exception the tool raises does: ``model`` hands it to the model as the
    #: call's error result (it may retry or explain), ``fail`` fails the run with
    #: ``tool_failed`` and tells the thread's owner why
    on_error: ToolErrorPolicy = "model"

    deferred = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        if self.on_error not in TOOL_ERROR_POLICIES:
            raise ValueError(
                f"Tool '{self.name}': on_error must be one of {', '.join(TOOL_ERROR_POLICIES)}."
            )

    def execute(self, inputs: Mapping[str, Any]) -> Any:
        return self.fn(**inputs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class FrontendTool:
    """A tool the browser executes; the run suspends until its result is submitted."""

    name: str
    description: str = ""
    input_schema: JSONSchema = dataclasses.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    requires_approval: bool = False

    deferred = True
    redact: tuple[str, ...] = ()
    idempotent = False
    #: the browser's errors always reach the model
    on_error: typing.ClassVar[ToolErrorPolicy] = "model"

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not isinstance(self.input_schema, dict) or self.input_schema.get("type", "object") != (
            "object"
        ):
            raise ValueError(f"Frontend tool '{self.name}' needs an object input_schema.")

    def to_json(self) -> FrontendToolJSON:
        """The declaration as JSON: how jobs and run records carry a client's catalog."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.input_schema,
            "requiresApproval": self.requires_approval,
        }

    @classmethod
    def from_json(cls, data: FrontendToolJSON) -> FrontendTool:
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            input_schema=data.get("parameters") or {"type": "object", "properties": {}},
            requires_approval=bool(data.get("requiresApproval", False)),
        )

    def execute(self, inputs: Mapping[str, Any]) -> Any:
        raise ToolError(
            f'Tool "{self.name}" requires external execution: '
            "submit its result instead of executing it on the backend."
        )


AnyTool = Tool | FrontendTool


_cancel: contextvars.ContextVar[StopSignal | None] = contextvars.ContextVar(
    "relayline_tool_cancel", default=None
)


def current_stop_signal() -> StopSignal:
    """The stop signal of the run whose tool is executing now (a fresh, never-set token
    outside a run, so a tool can call this unconditionally)."""
    token = _cancel.get()
    return token if token is not None else StopSignal()


@contextlib.contextmanager
def stop_signal_scope(token: StopSignal) -> Iterator[None]:
    """Make ``token`` what ``current_stop_signal()`` returns while a tool executes."""
    reset = _cancel.set(token)
    try:
        yield
    finally:
        _cancel.reset(reset)


def redactions(tools: typing.Iterable[AnyTool]) -> dict[str, tuple[str, ...]]:
    """Tool name -> argument names never published, for the tools that redact any."""
    return {t.name: t.redact for t in tools if t.redact}


@typing.overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@typing.overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    redact: typing.Iterable[str] = (),
    idempotent: bool = False,
    on_error: ToolErrorPolicy = "model",
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    redact: typing.Iterable[str] = (),
    idempotent: bool = False,
    on_error: ToolErrorPolicy = "model",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed, documented function into a backend :class:`Tool`.

    Usable bare (``@tool``) or with options (``@tool(requires_approval=True)``;
    ``on_error="fail"``: an exception fails the run instead of reaching the model).
    """

    def build(func: Callable[..., Any]) -> Tool:
        summary, params = _parse_docstring(inspect.getdoc(func) or "")
        return Tool(
            name=name or func.__name__,
            description=description if description is not None else summary,
            input_schema=_schema_for(func, params),
            fn=func,
            requires_approval=requires_approval,
            redact=tuple(redact),
            idempotent=idempotent,
            on_error=on_error,
        )

    return build(fn) if fn is not None else build


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary paragraph and ``Args:`` descriptions of a Google-style docstring."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    param_indent: int | None = None
    for raw in doc.splitlines():
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        heading = line[:-1].lower() if line.endswith(":") else ""
        if heading in ("args", "arguments", "parameters"):
            section, current, param_indent = "args", None, None
        elif heading in ("returns", "raises", "yields", "example", "examples"):
            section = "other"
        elif section == "summary":
            if line:
                summary.append(line)
            elif summary:
                section = "body"
        elif section == "args" and line:
            entry = _ARG_LINE.match(line)
            # A deeper-indented line continues the current parameter, colon or not.
            if entry and (param_indent is None or indent <= param_indent):
                param_indent = indent
                current = entry.group(1)
                params[current] = entry.group(2)
            elif current:
                params[current] = f"{params[current]} {line}".strip()
    return " ".join(summary), params


_ARG_LINE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _schema_for(func: Callable[..., Any], descriptions: Mapping[str, str]) -> JSONSchema:
    hints = get_type_hints(func)
    properties: dict[str, JSONSchema] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"Tool function {func.__name__} cannot take *args or **kwargs.")
        if param.name not in hints:
            raise TypeError(
                f"Tool function {func.__name__}: parameter '{param.name}' needs a type hint."
            )
        prop = type_schema(hints[param.name])
        if param.name in descriptions:
            prop["description"] = descriptions[param.name]
        if param.default is param.empty:
            required.append(param.name)
        else:
            prop["default"] = param.default
        properties[param.name] = prop
    schema: JSONSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(hint: Any) -> JSONSchema:
    """JSON schema of one Python type hint."""
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hint is Any:
        return {}
    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            inner = type_schema(non_null[0])
            if len(non_null) < len(args):
                if "type" in inner:
                    inner["type"] = [inner["type"], "null"]
                if "enum" in inner:
                    inner["enum"] = [*inner["enum"], None]
            return inner
        return {"anyOf": [type_schema(a) for a in args]}
    if origin is Literal:
        kinds = {type(a) for a in args}
        schema: JSONSchema = {"enum": list(args)}
        if len(kinds) == 1 and next(iter(kinds)) in _SCALARS:
            schema["type"] = _SCALARS[next(iter(kinds))]
        return schema
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set):
        item = type_schema(args[0]) if args else {}
        return {"type": "array", "items": item}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _schema_for_dataclass(hint)
    raise TypeError(f"Unsupported tool parameter type: {hint!r}")


def _schema_for_dataclass(cls: type) -> JSONSchema:
    hints = get_type_hints(cls)
    props = {f.name: type_schema(hints[f.name]) for f in dataclasses.fields(cls)}
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    schema: JSONSchema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def redacted_inputs(inputs: Mapping[str, Any], redact: typing.Iterable[str]) -> dict[str, Any]:
    """A digest of ``inputs`` safe to publish: keys kept, redacted values masked."""
    hidden = set(redact)
    return {k: ("***" if k in hidden else v) for k, v in inputs.items()}
