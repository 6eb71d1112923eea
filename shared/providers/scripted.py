"""A deterministic model for tests and demos: rules match the last user message,
steps answer one model call each.

Script format (docs/DESIGN.md section 6)::

    {"chunk_size": 4,
     "rules": [{"match": "(?i)title", "steps": [
                  {"tool_calls": [{"name": "read_title", "arguments": {}}]},
                  {"text": "The title is {{last_tool_result}}."}]}]}

A step may hold ``text``, ``reasoning``, ``tool_calls`` (``id`` optional),
``error`` (raised after any text is streamed), ``delay_ms`` and ``chunk_delay_ms``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from relayline.shared.errors import ProviderError
from relayline.shared.ids import new_id
from relayline.shared.jsonutil import dumps
from relayline.shared.messages import Message
from relayline.shared.providers.base import (
    ModelDelta,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)

_STEP_KEYS = {"text", "reasoning", "tool_calls", "error", "delay_ms", "chunk_delay_ms"}


@dataclasses.dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    steps: tuple[Mapping[str, Any], ...]


class ScriptedProvider:
    """Plays a script. ``calls`` counts model calls made by this instance (thread-safe)."""

    def __init__(self, script: Mapping[str, Any]) -> None:
        if not isinstance(script, Mapping):
            raise ValueError("A script must be a JSON object with 'rules'.")
        self.chunk_size = _positive_int(script.get("chunk_size", 4), "chunk_size")
        rules = script.get("rules")
        if not isinstance(rules, list) or not rules:
            raise ValueError("A script needs a non-empty 'rules' list.")
        self.rules = tuple(_parse_rule(i, rule) for i, rule in enumerate(rules))
        self.calls = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        with open(path, encoding="utf-8") as handle:
            return cls(json.load(handle))

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        with self._lock:
            self.calls += 1
        user_index = _last_user_index(request.messages)
        if user_index is None:
            raise ProviderError("The scripted provider needs a user message to match.")
        user_text = request.messages[user_index].text
        rule = next((r for r in self.rules if r.pattern.search(user_text)), None)
        if rule is None:
            raise ProviderError(f"No script rule matches the message {user_text!r}.")
        step_index = sum(1 for m in request.messages[user_index:] if m.role == "assistant")
        if step_index >= len(rule.steps):
            raise ProviderError(
                f"The script rule {rule.pattern.pattern!r} has {len(rule.steps)} step(s); "
                f"the model was called for step {step_index + 1}."
            )
        yield from self._play(rule.steps[step_index], request, user_text)

    def _play(
        self, step: Mapping[str, Any], request: ModelRequest, user_text: str
    ) -> Iterator[ModelDelta]:
        messages = request.messages
        # A stopped run wakes the scripted model at once, as closing a real response does.
        wait = request.stop_signal.wait if request.stop_signal is not None else time.sleep
        if step.get("delay_ms"):
            wait(step["delay_ms"] / 1000)
        pause = step.get("chunk_delay_ms", 0) / 1000
        # Chunk n is due n pauses after the first: a consumer that falls behind finds
        # the chunks due meanwhile waiting, as a real stream's socket buffer holds them,
        # rather than every chunk coming a pause after the consumer asked for it.
        due = time.monotonic()
        for key, delta_type in (("reasoning", ReasoningDelta), ("text", TextDelta)):
            if key in step:
                text = _render(step[key], messages, user_text)
                for start in range(0, len(text), self.chunk_size):
                    if pause:
                        due += pause
                        left = due - time.monotonic()
                        if left > 0:
                            wait(left)
                    yield delta_type(text[start : start + self.chunk_size])
        if "error" in step:
            raise ProviderError(str(step["error"]))
        for index, call in enumerate(step.get("tool_calls", ())):
            arguments = dumps(call.get("arguments", {}))
            call_id = call.get("id") or new_id("call")
            yield ToolCallDelta(index=index, id=call_id, name=call["name"])
            for start in range(0, len(arguments), self.chunk_size):
                yield ToolCallDelta(
                    index=index, arguments=arguments[start : start + self.chunk_size]
                )


def _positive_int(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Script '{name}' must be a positive integer, got {value!r}.")
    return value


def _parse_rule(index: int, rule: Any) -> _Rule:
    if not isinstance(rule, Mapping) or not isinstance(rule.get("match"), str):
        raise ValueError(f"Script rule {index} needs a string 'match' regex.")
    try:
        pattern = re.compile(rule["match"])
    except re.error as exc:
        raise ValueError(f"Script rule {index} has an invalid regex: {exc}.") from exc
    steps = rule.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ValueError(f"Script rule {index} needs a non-empty 'steps' list.")
    for number, step in enumerate(steps):
        unknown = set(step) - _STEP_KEYS if isinstance(step, Mapping) else None
        if unknown is None or unknown:
            raise ValueError(
                f"Script rule {index} step {number} must be an object with keys "
                f"{sorted(_STEP_KEYS)}; got {step!r}."
            )
        for call in step.get("tool_calls", ()):
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise ValueError(f"Script rule {index} step {number}: a tool call needs a name.")
            if not isinstance(call.get("arguments", {}), Mapping):
                raise ValueError(
                    f"Script rule {index} step {number}: tool call arguments must be an object."
                )
    return _Rule(pattern, tuple(steps))


def _last_user_index(messages: tuple[Message, ...]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return None


_TEMPLATE = re.compile(r"\{\{(last_user_message|last_tool_result|tool_results)\}\}")


def _render(template: str, messages: tuple[Message, ...], user_text: str) -> str:
    """Fill the templates in one pass (inserted text is never expanded again); tool
    results count only after the last user message."""
    start = _last_user_index(messages) or 0
    last_tool = next((m for m in reversed(messages[start:]) if m.role == "tool"), None)
    results = {r.call_id: r.content for r in last_tool.tool_results} if last_tool else {}
    values = {
        "last_user_message": user_text,
        "last_tool_result": last_tool.tool_results[-1].content
        if last_tool and last_tool.tool_results
        else "",
        "tool_results": dumps(results),
    }
    return _TEMPLATE.sub(lambda match: values[match.group(1)], template)
