"""The Python API of docs/DESIGN.md section 6 runs as written there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCRIPT = {
    "chunk_size": 4,
    "rules": [
        {
            "match": "(?i)delete",
            "steps": [
                {
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "name": "delete_file",
                            "arguments": {"path": "report.pdf"},
                        },
                        {"id": "call_2", "name": "read_title", "arguments": {}},
                    ]
                },
                {"text": "Deleted; the title is {{last_tool_result}}."},
            ],
        },
        {
            "match": "",
            "steps": [{"reasoning": "Greeting.", "text": "Hello! You said {{last_user_message}}"}],
        },
    ],
}


def test_design_section_6_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    monkeypatch.chdir(tmp_path)
    deleted: list[str] = []

    # --- as in docs/DESIGN.md section 6 ---------------------------------------------------
    from relayline.shared.agent import Agent, AgentSpec, FrontendTool, tool
    from relayline.shared.interrupts import ApprovalRequest, ToolResultsRequest
    from relayline.shared.persistence import Store
    from relayline.shared.protocols.agui.translator import AGUIInputTranslator
    from relayline.shared.providers import OpenAIProvider, ScriptedProvider  # noqa: F401

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"{path} deleted"

    def build() -> AgentSpec:
        return AgentSpec(
            provider=ScriptedProvider.from_file("script.json"),
            tools=[delete_file],
            frontend_tools=[FrontendTool("read_title", "Read the page title")],
            system_prompt="You help with the page.",
        )

    store = Store("sqlite:///relayline.db")
    agent = Agent("thread-1", spec=build(), store=store)
    state = agent.run("Delete report.pdf")
    assert state.status == "suspended" and state.interrupt is not None
    assert state.interrupt.kind == "approval"
    assert isinstance(state.interrupt, ApprovalRequest)
    assert [(a.id, a.name, a.inputs) for a in state.interrupt.actions] == [
        ("call_1", "delete_file", {"path": "report.pdf"})
    ]
    agent = Agent("thread-1", spec=build(), store=store)
    state = agent.submit_approval_decisions({"call_1": "approve"}).run()
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"
    assert isinstance(state.interrupt, ToolResultsRequest)
    assert [c.id for c in state.interrupt.tool_calls] == ["call_2"]
    payload = {
        "messages": [{"id": "t1", "role": "tool", "toolCallId": "call_2", "content": "Report"}]
    }
    frames = list(agent.submit_inputs(payload, AGUIInputTranslator()).events())
    assert frames  # native chunks without an adapter
    final = agent.state()
    assert final is not None and final.status == "completed"
    assert agent.history()[-1].text == "Deleted; the title is Report."
    assert deleted == ["report.pdf"]
    items = list(agent.stream("Hello"))
    assert items
    store.dispose()


def test_design_section_6_second_block_imports() -> None:
    from relayline.channels import (  # noqa: F401
        AbstractChannel,
        CallbackChannel,
        FakeChannel,
        LogOnlyChannel,
        MercureChannel,
        PusherChannel,
        SegmentLog,
    )
    from relayline.channels.stream.reader import LogMultiplexer  # noqa: F401
    from relayline.shared.events import Activity, Custom, ProtocolEvent, StepFinished, StepStarted  # noqa: F401
    from relayline.shared.protocols.agui import AGUIAdapter  # noqa: F401
    from relayline.shared.protocols.agui.translator import AGUIInputTranslator  # noqa: F401
    from relayline.shared.protocols.native import NativeAdapter  # noqa: F401
    from relayline.shared.protocols.vercel import VercelAIAdapter  # noqa: F401
    from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator  # noqa: F401
    from relayline.shared.sse import encode_sse  # noqa: F401
