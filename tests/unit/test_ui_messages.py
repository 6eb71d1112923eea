"""``ui_messages``: a thread as the Vercel ``UIMessage[]`` of ``GET /api/chat/<id>``.

A reload must show what the live client holds: the same ids, parts and states. Each
projection is compared with the message the ``ai`` package assembled from the live
stream, and validated by the package's ``validateUIMessages`` (no unknown field).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relayline.shared.agent import Agent, AgentSpec, FrontendTool, tool
from relayline.shared.agent.stop import stop_thread
from relayline.shared.batch import rejection_text
from relayline.shared.chunks import ToolCallChunk
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.persistence import Store
from relayline.shared.protocols.vercel import ui_messages
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator
from relayline.shared.texts import CALL_STOPPED
from tests.support.agents import build_spec
from tests.support.vercel import (
    ChatClient,
    VercelSchema,
    scripted,
    vercel_agent,
)


def reload(agent: Agent, schema: VercelSchema, **options: Any) -> list[dict[str, Any]]:
    messages: Sequence[Mapping[str, Any]] = ui_messages(agent.history(), agent.inspect(), **options)
    schema.messages(messages)
    return [dict(m) for m in messages]  # plain dicts, as a client parses them


def live(client: ChatClient) -> dict[str, Any]:
    """The client's message without what only streaming leaves behind."""
    assert client.assistant is not None
    parts = []
    for part in client.assistant["parts"]:
        part = {k: v for k, v in part.items() if k != "rawInput"}
        if "approval" in part:
            part["approval"] = {k: v for k, v in part["approval"].items() if k != "requestReason"}
        parts.append(part)
    return {**client.assistant, "parts": parts}


def test_a_completed_turn_equals_the_live_message(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    client = ChatClient(vercel_schema, "done", "weather?")
    agent = vercel_agent(sqlite_store, "done", build_spec(tmp_path), client)
    client.receive(list(agent.stream(Message.user("weather?", id="u1"))))
    messages = reload(agent, vercel_schema)
    assert messages[0] == client.user
    assert messages[1] == client.assistant  # exactly, ids included
    assert [p["type"] for p in messages[1]["parts"]] == ["tool-weather", "step-start", "text"]


def test_mid_approval_and_mid_frontend_wait(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "wait", "Delete it")
    agent = vercel_agent(sqlite_store, "wait", spec, client)
    client.receive(list(agent.stream(Message.user("Delete it", id="u1"))))
    messages = reload(agent, vercel_schema)
    parts = messages[1]["parts"]
    assert parts[0]["state"] == "approval-requested"
    assert parts[0]["approval"] == {
        "id": "call_d",
        "requestReason": "Approval required for: delete_file",
    }
    assert parts[1]["state"] == "input-streaming"  # not handed to the browser yet
    assert [m["id"] for m in messages] == ["u1", client.message_id]
    assert {k: v for k, v in client.part("call_d").items() if k != "rawInput"} == parts[0]

    client.respond("call_d", False, "keep it")
    translate = VercelAIInputTranslator()
    client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    messages = reload(agent, vercel_schema)
    assert messages[1] == live(client)
    assert [p["state"] for p in messages[1]["parts"]] == ["approval-responded", "input-available"]
    assert messages[1]["parts"][0]["approval"] == {
        "id": "call_d",
        "approved": False,
        "reason": "keep it",
    }

    client.add_tool_output("call_t", "Report")
    client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    messages = reload(agent, vercel_schema)
    assert messages[1] == live(client)
    assert [p["type"] for p in messages[1]["parts"]] == [
        "tool-delete_file",
        "tool-read_title",
        "step-start",
        "text",
    ]
    assert messages[1]["parts"][0]["state"] == "output-denied"


def test_an_approved_call_and_partial_frontend_results(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "partial", "batch please")
    agent = vercel_agent(sqlite_store, "partial", spec, client)
    client.receive(list(agent.stream("batch please")))
    translate = VercelAIInputTranslator()
    for call_id in ("call_a", "call_b", "call_c"):
        client.respond(call_id, True)
    client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    client.add_tool_output("call_a", {"n": [1, False]})
    client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    messages = reload(agent, vercel_schema)
    tools = [p for p in messages[1]["parts"] if "toolCallId" in p]
    assert [(p["toolCallId"], p["state"]) for p in tools] == [
        ("call_a", "output-available"),
        ("call_b", "input-available"),
        ("call_c", "input-available"),
    ]
    assert tools[0]["output"] == {"n": [1, False]}  # the client's own value, types kept
    assert tools[0]["approval"] == {"id": "call_a", "approved": True}

    # A client rebuilt from the reload restates call_a as accepted: no conflict.
    client.assistant = messages[1]
    client.add_tool_output("call_b", "B")
    client.add_tool_output("call_c", error="closed")
    state = agent.submit_inputs(client.body(), translate).run()
    assert state.status == "completed"
    assert (
        state.message == 'Results: {"call_a":"{\\"n\\":[1,false]}","call_b":"B","call_c":"closed"}'
    )


def test_turns_steps_reasoning_ids_and_failed_batches(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    agent = Agent("turns", build_spec(tmp_path), sqlite_store)
    agent.run(Message.user("hello", id="u1"))
    # The consumer goes away while the weather call is pending: the run fails unsettled.
    items = agent.stream(Message.user("weather?", id="u2"))
    for item in items:
        if isinstance(item, ToolCallChunk):
            break
    items.close()
    messages = reload(agent, vercel_schema)
    first, weather = agent.history()[1], agent.history()[3]
    assert [(m["id"], m["role"]) for m in messages] == [
        ("u1", "user"),
        (first.id, "assistant"),
        ("u2", "user"),
        (weather.id, "assistant"),
    ]
    assert messages[1]["parts"][0] == {
        "type": "reasoning",
        "id": f"reasoning_{first.id}",
        "text": "Greeting.",
        "state": "done",
    }
    assert messages[3]["parts"] == [
        {
            "type": "tool-weather",
            "toolCallId": "call_w",
            "state": "output-error",
            "input": {"city": "Oslo"},
            "errorText": "The run failed.",
        }
    ]


def test_open_batch_outcomes_before_the_batch_settles(
    sqlite_store: Store, vercel_schema: VercelSchema
) -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    calls = [
        {"id": "c1", "name": "explode", "arguments": {}},
        {"id": "c2", "name": "read_title", "arguments": {}},
        {"id": "c3", "name": "read_title", "arguments": {}},
    ]
    spec = AgentSpec(
        provider=scripted({"tool_calls": calls}, {"text": "done"}),
        tools=[explode],
        frontend_tools=[FrontendTool("read_title")],
    )
    agent = Agent("open", spec, sqlite_store)
    agent.run("go")
    agent.submit_tool_results({"c2": {"error": "no tab"}}).run()
    parts = reload(agent, vercel_schema)[1]["parts"]
    assert [(p["state"], p.get("errorText")) for p in parts] == [
        ("output-error", "RuntimeError: boom"),
        ("output-error", "no tab"),
        ("input-available", None),
    ]


def test_an_approved_call_in_flight(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    agent = Agent("flight", build_spec(tmp_path), sqlite_store)
    agent.run("Delete it")
    record = agent.inspect()
    assert record is not None
    # Another worker took the decision and is executing the batch right now.
    running = dataclasses.replace(
        record, status="running", interrupt=None, accepted={"decisions": {"call_d": "approve"}}
    )
    messages = ui_messages(agent.history(), running)
    vercel_schema.messages(messages)
    assert [(p["state"], p.get("approval")) for p in messages[1]["parts"]] == [
        ("approval-responded", {"id": "call_d", "approved": True}),
        ("input-streaming", None),
    ]


def test_redaction_and_approval_marks_come_from_the_tools(
    sqlite_store: Store, vercel_schema: VercelSchema
) -> None:
    @tool(requires_approval=True, redact=["password"])
    def login(user: str, password: str) -> str:
        """Log in."""
        return "ok"

    call = {"id": "c1", "name": "login", "arguments": {"user": "ann", "password": "s3cr3t"}}
    spec = AgentSpec(provider=scripted({"tool_calls": [call]}, {"text": "in"}), tools=[login])
    agent = Agent("redact", spec, sqlite_store)
    agent.run("log in")
    open_part = reload(agent, vercel_schema)[1]["parts"][0]
    assert open_part["input"] == {"user": "ann", "password": "***"}  # the run knows
    agent.submit_approval_decisions({"c1": "approve"}).run()
    settled = reload(agent, vercel_schema, tools=spec.tools)[1]["parts"][0]
    assert settled == {
        "type": "tool-login",
        "toolCallId": "c1",
        "state": "output-available",
        "input": {"user": "ann", "password": "***"},
        "output": "ok",
        "approval": {"id": "c1", "approved": True},
    }


def test_settled_rejections_read_back_with_their_reason() -> None:
    call = ToolCallPart("c1", "delete_file", {})
    calls = (call, ToolCallPart("c2", "delete_file", {}), ToolCallPart("c3", "delete_file", {}))
    results = (
        ToolResultPart(
            "c1",
            "delete_file",
            rejection_text("delete_file", "not: that one."),
            rejected=True,
            reject_reason="not: that one.",
        ),
        ToolResultPart("c2", "delete_file", rejection_text("delete_file", None), rejected=True),
        # Text alone never makes a rejection: only the stored flag does.
        ToolResultPart("c3", "delete_file", rejection_text("delete_file", "x")),
    )
    stored = [
        Message.user("x", id="u"),
        Message(id="a", role="assistant", tool_calls=calls),
        Message(id="t", role="tool", tool_results=results),
    ]
    parts = ui_messages(stored, None)[1]["parts"]
    assert [p["state"] for p in parts] == ["output-denied", "output-denied", "output-available"]
    assert parts[0]["approval"] == {"id": "c1", "approved": False, "reason": "not: that one."}
    assert parts[1]["approval"] == {"id": "c2", "approved": False}
    assert ui_messages([], None) == []


def test_a_stopped_approval_reads_back_stopped_not_approved(
    sqlite_store: Store, vercel_schema: VercelSchema
) -> None:
    """Stop while a call awaits its approval: nobody approved it, so the history must
    not say ``approved: true``; the turn reads back stopped and names the call."""

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    call = {"id": "c1", "name": "delete_file", "arguments": {"path": "a.txt"}}
    spec = AgentSpec(
        provider=scripted({"tool_calls": [call]}, {"text": "gone"}), tools=[delete_file]
    )
    agent = Agent("stopped-approval", spec, sqlite_store)
    agent.run("delete a.txt")
    assert stop_thread(sqlite_store, "stopped-approval").stopped
    assistant = reload(agent, vercel_schema, tools=spec.tools)[1]
    assert assistant["parts"] == [
        {
            "type": "tool-delete_file",
            "toolCallId": "c1",
            "state": "output-error",
            "input": {"path": "a.txt"},
            "errorText": CALL_STOPPED,  # the model's words; the page shows its own
        }
    ]
    assert assistant["metadata"] == {"stopped": True, "unfinishedCalls": {"c1": "stopped"}}


def test_calls_a_failed_run_left_open_read_back_interrupted() -> None:
    calls = (ToolCallPart("c1", "weather", {}), ToolCallPart("c2", "weather", {}))
    stored = [
        Message.user("x", id="u"),
        Message(id="a", role="assistant", tool_calls=calls),
        Message(id="t", role="tool", tool_results=(ToolResultPart("c1", "weather", "sun"),)),
    ]
    assistant = ui_messages(stored, None)[1]
    assert [p["state"] for p in assistant["parts"]] == ["output-available", "output-error"]
    # Not stopped by anyone: the turn is not marked stopped.
    assert assistant["metadata"] == {"unfinishedCalls": {"c2": "interrupted"}}
