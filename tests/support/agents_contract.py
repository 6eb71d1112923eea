"""The scripted agent of the AG-UI contract suite (``tests/contract/agui``).

One rule per scenario of reference catalogue J, keyed by a phrase of the user message,
with fixed call ids so the Node tests can name the calls they expect. Side effects are
logged as JSON lines under ``$RELAYLINE_TEST_COUNTS`` so that the Node side can check
what the backend really did, per thread, whatever process did it:

- ``model.jsonl``: one line per model call: ``first`` (the id of the thread's first
  message, which the tests derive from the thread id), ``lastUser``, the ``tools``
  offered to the model, and the ``toolResults`` it sees since the last user message
  (``callId``, ``name``, ``content``, ``isError``);
- ``tool.<name>.jsonl``: one line per backend tool execution with its arguments (each
  scenario gives its backend calls distinct arguments).

Lines are appended in one ``write`` each, below PIPE_BUF, so concurrent processes
never interleave them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relayline.shared.agent import AgentSpec, FrontendTool, tool
from relayline.shared.messages import Message
from relayline.shared.providers import ScriptedProvider
from relayline.shared.providers.base import ModelDelta, ModelRequest

PICK_COLOR_ARGS: dict[str, Any] = {
    "palette": {"name": "sea", "shades": ["teal", "navy"]},
    "tags": [{"label": "calm", "weight": 2}],
    "note": None,
}


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": cid, "name": name, "arguments": args} for cid, name, args in calls]


CONTRACT_SCRIPT: dict[str, Any] = {
    "chunk_size": 16,
    "rules": [
        {  # 161
            "match": "(?i)round trip",
            "steps": [
                {"tool_calls": _calls(("call_rt_title", "read_title", {}))},
                {"text": "The title is {{last_tool_result}}."},
            ],
        },
        {  # 162
            "match": "(?i)approve me",
            "steps": [
                {
                    "text": "I need your approval to open the docs.",
                    "tool_calls": _calls(("call_approve", "browser", {"page": "docs"})),
                },
                {"text": "Opened: {{last_tool_result}}"},
            ],
        },
        {  # 163
            "match": "(?i)reject me",
            "steps": [
                {
                    "text": "May I open the admin page?",
                    "tool_calls": _calls(("call_reject", "browser", {"page": "admin"})),
                },
                {"text": "Understood: {{last_tool_result}}"},
            ],
        },
        {  # 164
            "match": "(?i)mixed batch",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_mix_weather", "weather", {"city": "Mixville"}),
                        ("call_mix_title", "read_title", {}),
                    )
                },
                {"text": "Mixed: {{tool_results}}"},
            ],
        },
        {  # 165
            "match": "(?i)twin lookups",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_twin_a", "lookup", {"query": "alpha"}),
                        ("call_twin_b", "lookup", {"query": "beta"}),
                    )
                },
                {"text": "Twins: {{tool_results}}"},
            ],
        },
        {  # 166
            "match": "(?i)structured values",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_val_object", "lookup", {"query": "object"}),
                        ("call_val_array", "lookup", {"query": "array"}),
                        ("call_val_false", "lookup", {"query": "false"}),
                        ("call_val_zero", "lookup", {"query": "zero"}),
                        ("call_val_null", "lookup", {"query": "null"}),
                    )
                },
                {"text": "Values: {{tool_results}}"},
            ],
        },
        {  # 167
            "match": "(?i)throwing handler",
            "steps": [
                {"tool_calls": _calls(("call_throw", "lookup", {"query": "throw"}))},
                {"text": "Handler said: {{last_tool_result}}"},
            ],
        },
        {  # 168
            "match": "(?i)backend failure",
            "steps": [
                {"tool_calls": _calls(("call_boom", "explode", {"reason": "disk on fire"}))},
                {"text": "Backend said: {{last_tool_result}}"},
            ],
        },
        {  # 169
            "match": "(?i)two steps",
            "steps": [
                {"tool_calls": _calls(("call_step_1", "lookup", {"query": "first"}))},
                {"tool_calls": _calls(("call_step_2", "lookup", {"query": "second"}))},
                {"text": "Second: {{last_tool_result}}"},
            ],
        },
        {  # 170-172
            "match": "(?i)partial batch",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_part_1", "lookup", {"query": "one"}),
                        ("call_part_2", "lookup", {"query": "two"}),
                        ("call_part_3", "lookup", {"query": "three"}),
                    )
                },
                {"text": "Partial: {{tool_results}}"},
            ],
        },
        {  # 173, first turn
            "match": "(?i)stale one",
            "steps": [
                {"tool_calls": _calls(("call_stale_1", "lookup", {"query": "old"}))},
                {"text": "Old: {{last_tool_result}}"},
            ],
        },
        {  # 173, second turn
            "match": "(?i)stale two",
            "steps": [
                {"tool_calls": _calls(("call_stale_2", "lookup", {"query": "new"}))},
                {"text": "New: {{last_tool_result}}"},
            ],
        },
        {  # 174
            "match": "(?i)restart",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_rs_weather", "weather", {"city": "Restartown"}),
                        ("call_rs_title", "read_title", {}),
                    )
                },
                {"text": "After restart: {{tool_results}}"},
            ],
        },
        {  # 175
            "match": "(?i)multibyte",
            "steps": [
                {"tool_calls": _calls(("call_long", "lookup", {"query": "long"}))},
                {"text": "Echo: {{last_tool_result}}"},
            ],
        },
        {  # 177
            "match": "(?i)fail after text",
            "steps": [
                {"text": "Partial answer that never completes.", "error": "upstream exploded"}
            ],
        },
        {  # 178, a tool of the client's catalog
            "match": "(?i)catalog tool",
            "steps": [
                {"tool_calls": _calls(("call_pick", "pick_color", PICK_COLOR_ARGS))},
                {"text": "Picked: {{last_tool_result}}"},
            ],
        },
        {  # 178, a tool nobody declared
            "match": "(?i)ghost tool",
            "steps": [{"tool_calls": _calls(("call_ghost", "ghost_tool", {}))}],
        },
        {  # 179
            "match": "(?i)slow answer",
            "steps": [{"chunk_delay_ms": 25, "text": "A slow answer. " * 60}],
        },
        {  # 180
            "match": "(?i)reload approval",
            "steps": [
                {
                    "text": "Approval needed to open settings.",
                    "tool_calls": _calls(("call_rl_approve", "browser", {"page": "settings"})),
                },
                {"text": "Opened after reload: {{last_tool_result}}"},
            ],
        },
        {  # 181
            "match": "(?i)reload wait",
            "steps": [
                {
                    "text": "Reading the title.",
                    "tool_calls": _calls(("call_rl_wait", "read_title", {})),
                },
                {"text": "Title after reload: {{last_tool_result}}"},
            ],
        },
        {  # 182
            "match": "(?i)reload cancel",
            "steps": [
                {"tool_calls": _calls(("call_rl_cancel", "read_title", {}))},
                {"text": "Cancelled: {{last_tool_result}}"},
            ],
        },
        {
            "match": "",
            "steps": [{"reasoning": "Greeting.", "text": "Hello! {{last_user_message}}"}],
        },
    ],
}


def _append(path: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record, ensure_ascii=False) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)


def _since_last_user(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return messages[index:]
    return messages


class RecordingProvider:
    """The scripted provider, logging what each model call was given (module docstring)."""

    def __init__(self, script: dict[str, Any], counts: Path) -> None:
        self.inner = ScriptedProvider(script)
        self.counts = counts

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        recent = _since_last_user(request.messages)
        _append(
            self.counts / "model.jsonl",
            {
                "first": request.messages[0].id if request.messages else None,
                "lastUser": recent[0].text if recent and recent[0].role == "user" else None,
                "tools": [t.name for t in request.tools],
                "toolResults": [
                    {
                        "callId": part.call_id,
                        "name": part.name,
                        "content": part.content,
                        "isError": part.is_error,
                    }
                    for message in recent
                    if message.role == "tool"
                    for part in message.tool_results
                ],
            },
        )
        yield from self.inner.stream(request)


def build_contract_spec(counts: Path) -> AgentSpec:
    @tool
    def weather(city: str) -> str:
        """Current weather.

        Args:
            city: City name.
        """
        _append(counts / "tool.weather.jsonl", {"city": city})
        return f"sunny in {city}"

    @tool
    def explode(reason: str) -> str:
        """A backend tool that always fails.

        Args:
            reason: What the failure says.
        """
        _append(counts / "tool.explode.jsonl", {"reason": reason})
        raise RuntimeError(reason)

    return AgentSpec(
        provider=RecordingProvider(CONTRACT_SCRIPT, counts),
        tools=[weather, explode],
        frontend_tools=[
            FrontendTool("read_title", "Read the page title"),
            FrontendTool(
                "lookup",
                "Look something up in the browser",
                {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            ),
            FrontendTool(
                "browser",
                "Open a page in the browser",
                {"type": "object", "properties": {"page": {"type": "string"}}},
                requires_approval=True,
            ),
        ],
        system_prompt="Contract test agent.",
    )


def contract_spec() -> AgentSpec:
    """``RELAYLINE_AGENT`` of the contract stack: logs go to $RELAYLINE_TEST_COUNTS."""
    return build_contract_spec(Path(os.environ.get("RELAYLINE_TEST_COUNTS", tempfile.gettempdir())))


def broken_spec() -> AgentSpec:
    """A named agent whose factory fails: every request to it fails before streaming."""
    raise RuntimeError("The 'broken' agent is not registered with any provider.")
