"""The scripted agent behind the CopilotKit contract suite (``tests/contract/copilotkit``).

One rule per scenario of reference catalogue J 187, keyed by a phrase of the user
message, with fixed call ids (``ck_…``) so the Node tests can name the calls they
expect. The tools split the way a CopilotKit application splits them:

- ``pick_color``, ``read_clock``: declared by the page only (CopilotKit ``addTool``),
  so they reach ``POST /agui`` as ``RunAgentInput.tools``; the backend knows nothing
  of them beforehand;
- ``open_page``: a frontend tool the *backend* declares with an approval gate; the page
  registers its handler (and so declares it again in its tool catalog);
- ``delete_file``: a backend tool gated by approval (a ``confirmation`` interrupt).

Model calls and backend tool executions are logged as JSON lines under
``$RELAYLINE_TEST_COUNTS`` (``model.jsonl`` by :class:`RecordingProvider`, see
``tests/support/agents_contract.py``; ``tool.<name>.jsonl`` here), so the Node side can
check what the backend did whatever process did it. Each model stream's deltas, and
whether the loop closed it early, go to ``model.delta.jsonl`` and ``model.closed.jsonl``
(:class:`tests.contract.vercel_agent.StreamCountingProvider`), for the stop tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from relayline.shared.agent import AgentSpec, FrontendTool, tool
from tests.contract.vercel_agent import StreamCountingProvider
from tests.support.agents_contract import RecordingProvider

#: the answer of the stop scenarios: 405 chunks 50 ms apart (about 20 s)
STORY_TEXT = "Once upon a time, " * 360


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": call_id, "name": name, "arguments": arguments}]


COPILOTKIT_SCRIPT: dict[str, Any] = {
    "chunk_size": 16,
    "rules": [
        {  # a tool of the page's catalog, answered by its handler
            "match": "(?i)pick a colou?r",
            "steps": [
                {
                    "text": "Let me ask the page.",
                    "tool_calls": _call("ck_pick", "pick_color", {"palette": "sea", "count": 2}),
                },
                {"text": "Picked: {{last_tool_result}}"},
            ],
        },
        {  # a catalog tool the page no longer declares (its component unmounted)
            "match": "(?i)unmounted tool",
            "steps": [{"tool_calls": _call("ck_gone", "pick_color", {"palette": "gone"})}],
        },
        {  # a handler that throws: CopilotKit sends "Error: …" and no follow-up run
            "match": "(?i)broken clock",
            "steps": [
                {"tool_calls": _call("ck_clock", "read_clock", {"zone": "UTC"})},
                {"text": "Clock said: {{last_tool_result}}"},
            ],
        },
        {  # a backend tool behind a confirmation interrupt, approved
            "match": "(?i)delete the draft",
            "steps": [
                {
                    "text": "I need your approval to delete the draft.",
                    "tool_calls": _call(
                        "ck_delete", "delete_file", {"path": "reports/ck-draft.pdf"}
                    ),
                },
                {"text": "Done: {{last_tool_result}}"},
            ],
        },
        {  # the same, rejected
            "match": "(?i)delete the archive",
            "steps": [
                {
                    "text": "May I delete the archive?",
                    "tool_calls": _call(
                        "ck_keep", "delete_file", {"path": "reports/ck-archive.zip"}
                    ),
                },
                {"text": "Understood: {{last_tool_result}}"},
            ],
        },
        {  # an approval-gated frontend tool: approval first, then the page's handler
            "match": "(?i)open the docs",
            "steps": [
                {
                    "text": "Opening the docs needs your approval.",
                    "tool_calls": _call("ck_open", "open_page", {"page": "docs"}),
                },
                {"text": "Opened: {{last_tool_result}}"},
            ],
        },
        {  # reload of the page while an approval is open (the bridge keeps running)
            "match": "(?i)reload while approving",
            "steps": [
                {
                    "text": "Approval needed to delete the log.",
                    "tool_calls": _call(
                        "ck_reload", "delete_file", {"path": "reports/ck-reload.log"}
                    ),
                },
                {"text": "Deleted after reload: {{last_tool_result}}"},
            ],
        },
        {  # the same after the bridge itself restarted (its memory is gone)
            "match": "(?i)bridge restart",
            "steps": [
                {
                    "text": "Approval needed to delete the cache.",
                    "tool_calls": _call(
                        "ck_restart", "delete_file", {"path": "reports/ck-restart.tmp"}
                    ),
                },
                {"text": "Deleted after restart: {{last_tool_result}}"},
            ],
        },
        {  # stop through the runtime, or with RelaylineAgent.abortRun() directly
            "match": "(?i)tell me a story",
            "steps": [{"chunk_delay_ms": 50, "text": STORY_TEXT}],
        },
        {
            "match": "",
            "steps": [{"text": "Hello! {{last_user_message}}"}],
        },
    ],
}


def _log(counts: Path, name: str, record: dict[str, Any]) -> None:
    # One write per line, below PIPE_BUF: concurrent processes never interleave.
    with open(counts / f"tool.{name}.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def build_copilotkit_spec(counts: Path) -> AgentSpec:
    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file to delete.
        """
        _log(counts, "delete_file", {"path": path})
        return f"deleted {path}"

    return AgentSpec(
        provider=StreamCountingProvider(RecordingProvider(COPILOTKIT_SCRIPT, counts), counts),
        tools=[delete_file],
        frontend_tools=[
            FrontendTool(
                "open_page",
                "Open a page of the application",
                {
                    "type": "object",
                    "properties": {"page": {"type": "string"}},
                    "required": ["page"],
                },
                requires_approval=True,
            ),
        ],
        system_prompt="CopilotKit contract test agent.",
    )


def copilotkit_spec() -> AgentSpec:
    """``RELAYLINE_AGENT`` of the CopilotKit contract stack."""
    counts = os.environ.get("RELAYLINE_TEST_COUNTS", tempfile.gettempdir())
    return build_copilotkit_spec(Path(counts))
