"""The scripted agent of the Vercel ``useChat`` contract suite (``tests/contract/vercel``).

One rule per scenario of reference catalogue J 183-186, keyed by a phrase of the user
message, with fixed call ids so the browser tests can name the parts they expect.
Model calls and backend tool executions are logged by
:class:`tests.support.agents_contract.RecordingProvider` and by the tools below, as JSON
lines under ``$RELAYLINE_TEST_COUNTS`` (``model.jsonl``, ``tool.<name>.jsonl``), so
the Node side can check what the backend really did, whatever process did it.
:class:`StreamCountingProvider` adds what a stop test reads: ``model.delta.jsonl``, a
line per delta handed to the loop, and ``model.closed.jsonl``, a line when the loop
closed a model stream before its end, each ``{"first", "at"}`` (the thread's first
message id, the wall-clock time in ms).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relayline.shared.agent import AgentSpec, FrontendTool, tool
from relayline.shared.providers.base import ModelDelta, ModelRequest
from tests.support.agents_contract import RecordingProvider


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": cid, "name": name, "arguments": args} for cid, name, args in calls]


#: the answer of the slow scenario, streamed in 57 chunks 25 ms apart (about 1.4 s)
SLOW_TEXT = "A slow answer. " * 60
#: the answer of the resume scenario: 319 chunks 25 ms apart (about 8 s), long enough
#: that a reload under load still lands mid-answer
LONG_TEXT = "A long answer. " * 340
#: the answer of the stop scenario: 405 chunks 50 ms apart (about 20 s); a stop lands
#: long before its end
STORY_TEXT = "Once upon a time, " * 360


class StreamCountingProvider:
    """A provider that logs every delta it hands to the loop and whether the loop
    closed its stream early (module docstring), so a test sees the model call end."""

    def __init__(self, inner: RecordingProvider, counts: Path) -> None:
        self.inner = inner
        self.counts = counts

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        first = request.messages[0].id if request.messages else None
        finished = False
        try:
            for delta in self.inner.stream(request):
                self._log("model.delta.jsonl", first)
                yield delta
            finished = True
        finally:
            if not finished:
                self._log("model.closed.jsonl", first)

    def _log(self, name: str, first: str | None) -> None:
        line = json.dumps({"first": first, "at": time.time() * 1000}) + "\n"
        with open(self.counts / name, "a", encoding="utf-8") as handle:
            handle.write(line)  # one write below PIPE_BUF: processes never interleave


VERCEL_SCRIPT: dict[str, Any] = {
    "chunk_size": 16,
    "rules": [
        {  # 183: a backend tool behind an approval
            "match": "(?i)delete the report",
            "steps": [
                {
                    "text": "I need your approval to delete it.",
                    "tool_calls": _calls(("call_v_delete", "delete_file", {"path": "report.pdf"})),
                },
                {"text": "Done: {{last_tool_result}}"},
            ],
        },
        {  # 186: the same, for the refusal scenario
            "match": "(?i)delete the draft",
            "steps": [
                {
                    "text": "I need your approval to delete it.",
                    "tool_calls": _calls(("call_v_draft", "delete_file", {"path": "draft.txt"})),
                },
                {"text": "Done: {{last_tool_result}}"},
            ],
        },
        {  # 183: a frontend tool behind an approval: approved, then run by the page
            "match": "(?i)open the docs",
            "steps": [
                {
                    "text": "May I open the docs?",
                    "tool_calls": _calls(
                        ("call_v_docs", "browser", {"page": "docs", "hold": True})
                    ),
                },
                {"text": "Opened: {{last_tool_result}}"},
            ],
        },
        {  # 183: rejected with a reason
            "match": "(?i)open the admin page",
            "steps": [
                {
                    "text": "May I open the admin page?",
                    "tool_calls": _calls(("call_v_admin", "browser", {"page": "admin"})),
                },
                {"text": "Understood: {{last_tool_result}}"},
            ],
        },
        {  # 183: a frontend handler that runs once
            "match": "(?i)read the title",
            "steps": [
                {"tool_calls": _calls(("call_v_title", "read_title", {}))},
                {"text": "The title is {{last_tool_result}}."},
            ],
        },
        {  # 183: partial eager submission (the page holds "two" until released)
            "match": "(?i)partial lookups",
            "steps": [
                {
                    "tool_calls": _calls(
                        ("call_v_one", "lookup", {"query": "one"}),
                        ("call_v_two", "lookup", {"query": "two", "hold": True}),
                        ("call_v_three", "lookup", {"query": "three"}),
                    )
                },
                {"text": "Partial: {{tool_results}}"},
            ],
        },
        {  # 183: reload during an approval, then continue in the reloaded page
            "match": "(?i)reload approval",
            "steps": [
                {
                    "text": "Approval needed to open settings.",
                    "tool_calls": _calls(("call_v_settings", "browser", {"page": "settings"})),
                },
                {"text": "Opened after reload: {{last_tool_result}}"},
            ],
        },
        {  # resume: long enough that a page reloads well before its end
            "match": "(?i)long answer",
            "steps": [{"chunk_delay_ms": 25, "text": LONG_TEXT}],
        },
        {  # stop: useChat's stop() plus the stop endpoint, mid-answer
            "match": "(?i)tell me a story",
            "steps": [{"chunk_delay_ms": 50, "text": STORY_TEXT}],
        },
        {  # 184
            "match": "(?i)slow answer",
            "steps": [{"chunk_delay_ms": 25, "text": SLOW_TEXT}],
        },
        {  # 185: the page answers with a long multibyte text, the model echoes it
            "match": "(?i)multibyte",
            "steps": [
                {"tool_calls": _calls(("call_v_long", "lookup", {"query": "long"}))},
                {"text": "Echo: {{last_tool_result}}"},
            ],
        },
        {  # 186: a model step that fails after streaming some text
            "match": "(?i)fail after text",
            "steps": [
                {"text": "Partial answer that never completes.", "error": "upstream exploded"}
            ],
        },
        {
            "match": "",
            "steps": [{"reasoning": "Greeting.", "text": "Hello! {{last_user_message}}"}],
        },
    ],
}


def build_vercel_spec(counts: Path) -> AgentSpec:
    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file to delete.
        """
        line = json.dumps({"path": path}) + "\n"
        with open(counts / "tool.delete_file.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line)  # one write below PIPE_BUF: processes never interleave
        return f"{path} deleted"

    return AgentSpec(
        provider=StreamCountingProvider(RecordingProvider(VERCEL_SCRIPT, counts), counts),
        tools=[delete_file],
        frontend_tools=[
            FrontendTool("read_title", "Read the page title"),
            FrontendTool(
                "lookup",
                "Look something up in the page",
                {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "hold": {"type": "boolean"}},
                    "required": ["query"],
                },
            ),
            FrontendTool(
                "browser",
                "Open a page in the browser",
                {
                    "type": "object",
                    "properties": {"page": {"type": "string"}, "hold": {"type": "boolean"}},
                },
                requires_approval=True,
            ),
        ],
        system_prompt="Vercel contract test agent.",
    )


def vercel_spec() -> AgentSpec:
    """``RELAYLINE_AGENT`` of the Vercel contract stack: logs go to $RELAYLINE_TEST_COUNTS."""
    counts = Path(os.environ.get("RELAYLINE_TEST_COUNTS", tempfile.gettempdir()))
    return build_vercel_spec(counts)
