"""The scripted agent of the ``@cyronius/lm-ag-ui`` contract suite (``tests/contract/lm-agui``).

The driver registers it as a named agent (``RELAYLINE_AGENTS=lm=...:lm_spec``), so the
client talks to ``POST /agent/lm`` and loads ``GET /agent/lm``. One rule per scenario,
keyed by a phrase of the user message, with fixed call ids the Node tests name.

What the backend really did is logged as JSON lines under ``$RELAYLINE_TEST_COUNTS``,
whatever process did it (one ``write`` per line, below PIPE_BUF, so lines never
interleave):

- ``lm-model.jsonl``: one line per model call: ``first`` (the id of the thread's first
  message; the Node side names user messages ``<threadId>-u<n>``), ``lastUser``, the
  ``tools`` offered, and ``seen``, the conversation the model was given, one entry per
  message (``user <id>``, ``assistant <id>``) or tool result (``tool <callId>``);
- ``lm-tool.weather.jsonl``: one line per backend ``weather`` execution with its
  arguments (each scenario asks for a different city).
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

#: the cities of the backend-tool turns, one per scenario so executions can be told apart
CITIES = ("Bergen", "Tromso", "Oslo")

SUGGESTIONS = ("Read the page title", "Charts|Render a bar chart", "Weather|Weather in Oslo")


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _weather_rule(city: str) -> dict[str, Any]:
    return {
        "match": f"(?i)weather in {city}",
        "steps": [
            {
                "text": f"Checking the weather in {city}.",
                "tool_calls": [_call(f"call_lm_weather_{city.lower()}", "weather", {"city": city})],
            },
            {"text": "Weather: {{last_tool_result}}."},
        ],
    }


LM_SCRIPT: dict[str, Any] = {
    "chunk_size": 8,
    "rules": [
        {  # a frontend tool announced with text: the client files the call under that text
            "match": "(?i)page title",
            "steps": [
                {
                    "text": "Let me read the page title.",
                    "tool_calls": [_call("call_lm_page", "read_title", {})],
                },
                {"text": "The page title is {{last_tool_result}}."},
            ],
        },
        {  # a frontend tool alone: the client names the assistant message itself
            "match": "(?i)window title",
            "steps": [
                {"tool_calls": [_call("call_lm_window", "read_title", {})]},
                {"text": "The window title is {{last_tool_result}}."},
            ],
        },
        {  # the second step is only reached when the client does not stop after the tool
            "match": "(?i)render a bar chart",
            "steps": [
                {"tool_calls": [_call("call_lm_chart", "render_chart", {"kind": "bar"})]},
                {"text": "Here is your chart: {{last_tool_result}}."},
            ],
        },
        *(_weather_rule(city) for city in CITIES),
        {"match": "", "steps": [{"text": "Hello! You said: {{last_user_message}}"}]},
    ],
}


def _append(path: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record, ensure_ascii=False) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)


def _seen(messages: tuple[Message, ...]) -> list[str]:
    seen: list[str] = []
    for message in messages:
        if message.role == "tool":
            seen += [f"tool {part.call_id}" for part in message.tool_results]
        else:
            seen.append(f"{message.role} {message.id}")
    return seen


class RecordingProvider:
    """The scripted provider, logging what each model call was given (module docstring)."""

    def __init__(self, script: dict[str, Any], counts: Path) -> None:
        self.inner = ScriptedProvider(script)
        self.counts = counts

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        users = [m.text for m in request.messages if m.role == "user"]
        _append(
            self.counts / "lm-model.jsonl",
            {
                "first": request.messages[0].id if request.messages else None,
                "lastUser": users[-1] if users else None,
                "tools": [t.name for t in request.tools],
                "seen": _seen(request.messages),
            },
        )
        yield from self.inner.stream(request)


def build_lm_spec(counts: Path) -> AgentSpec:
    @tool
    def weather(city: str) -> str:
        """Current weather.

        Args:
            city: City name.
        """
        _append(counts / "lm-tool.weather.jsonl", {"city": city})
        return f"sunny in {city}"

    return AgentSpec(
        provider=RecordingProvider(LM_SCRIPT, counts),
        tools=[weather],
        frontend_tools=[
            FrontendTool("read_title", "Read the page title"),
            FrontendTool(
                "render_chart",
                "Render a chart in the page",
                {
                    "type": "object",
                    "properties": {"kind": {"type": "string"}},
                    "required": ["kind"],
                },
            ),
        ],
        system_prompt="lm-ag-ui contract test agent.",
        suggestions=SUGGESTIONS,
    )


def lm_spec() -> AgentSpec:
    """The named agent of the lm-ag-ui stack: logs go to $RELAYLINE_TEST_COUNTS."""
    return build_lm_spec(Path(os.environ.get("RELAYLINE_TEST_COUNTS", tempfile.gettempdir())))
