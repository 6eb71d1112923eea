"""Vercel round trips on SQLite and a real PostgreSQL, every step by a fresh Agent on
its own Store (as another web or worker process would), with ``useChat`` bodies
translated by VercelAIInputTranslator and every stream checked by the ``ai`` package.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.errors import RunNotWaitingError
from relayline.shared.jsonutil import normalize_result
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.protocols.vercel import ui_messages
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator
from relayline.shared.tools import AnyTool
from tests.support.agents import build_spec, count
from tests.support.vercel import ChatClient, VercelSchema

pytestmark = pytest.mark.integration

TRANSLATE = VercelAIInputTranslator()


class Process:
    """One request or task: its own Store and Agent, gone afterwards."""

    def __init__(self, url: str, thread: str, spec: AgentSpec, client: ChatClient) -> None:
        self.store = Store(url, migrate=False)
        self.agent = Agent(thread, spec, self.store)
        self.agent.set_stream_adapter(client.adapter)
        self.client = client

    def new_turn(self) -> list[dict[str, Any]]:
        message_id, text = VercelAIInputTranslator.new_turn_text(self.client.body())
        try:
            return self.client.receive(list(self.agent.stream(Message.user(text, id=message_id))))
        finally:
            self.store.dispose()

    def answer(self) -> list[dict[str, Any]]:
        body = self.client.body()
        assert VercelAIInputTranslator.is_continuation(body)
        try:
            return self.client.receive(list(self.agent.submit_inputs(body, TRANSLATE).events()))
        finally:
            self.store.dispose()

    def reload(self) -> list[dict[str, Any]]:
        """``GET /api/chat/<id>``."""
        try:
            spec = self.agent.spec
            tools: list[AnyTool] = [*spec.tools, *spec.frontend_tools]
            messages: Sequence[Mapping[str, Any]] = ui_messages(
                self.agent.history(), self.agent.inspect(), tools=tools
            )
            return [dict(m) for m in messages]  # plain dicts, as a client parses them
        finally:
            self.store.dispose()


@pytest.fixture
def processes(store: Store, tmp_path: Path) -> Iterator[Callable[[str, ChatClient], Process]]:
    spec = build_spec(tmp_path)

    def process(thread: str, client: ChatClient) -> Process:
        return Process(store.url, thread, spec, client)

    yield process


def comparable(message: dict[str, Any], settled: bool = False) -> dict[str, Any]:
    """A live message minus what only streaming leaves behind: raw input text, the
    request text kept on answered approvals, and the approval the package keeps on an
    approved call it then dispatches (its own validateUIMessages refuses that one)."""
    message = copy.deepcopy(message)
    for part in message["parts"]:
        part.pop("rawInput", None)
        if part.get("state") == "input-available":
            part.pop("approval", None)
        if settled and "output" in part:  # once settled, history keeps the model's text
            part["output"] = normalize_result(part["output"])
        if "approval" in part and "approved" in part["approval"]:
            part["approval"].pop("requestReason", None)
    return message


def test_approval_then_frontend_results_with_reloads(
    processes: Callable[[str, ChatClient], Process], vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    client = ChatClient(vercel_schema, "v-1", "Delete the report")
    frames = processes("v-1", client).new_turn()
    assert frames[-2]["type"] == "tool-approval-request"
    turn_id = client.message_id

    reloaded = processes("v-1", client).reload()
    vercel_schema.messages(reloaded)
    assert [m["id"] for m in reloaded] == ["u1", turn_id]
    assert reloaded[1] == comparable(client.assistant or {})
    assert [p["state"] for p in reloaded[1]["parts"]] == ["approval-requested", "input-streaming"]

    # The page reloads: the client now holds only what GET /api/chat/<id> returned.
    client.assistant = reloaded[1]
    client.respond("call_d", True)
    frames = processes("v-1", client).answer()
    assert frames[[f["type"] for f in frames].index("start")]["messageId"] == turn_id
    assert [f["type"] for f in frames if f["type"].startswith("tool-")] == [
        "tool-output-available",
        "tool-input-available",
    ]
    assert count(tmp_path, "tool.delete_file") == 1

    reloaded = processes("v-1", client).reload()
    vercel_schema.messages(reloaded)
    assert reloaded[1] == comparable(client.assistant or {})
    assert [p["state"] for p in reloaded[1]["parts"]] == ["output-available", "input-available"]

    client.assistant = reloaded[1]
    client.add_tool_output("call_t", {"title": "Q3 report"})
    frames = processes("v-1", client).answer()
    assert [f["type"] for f in frames if not f["type"].startswith("data-")][-3:] == [
        "text-end",
        "finish-step",
        "finish",
    ]
    final = processes("v-1", client).reload()
    vercel_schema.messages(final)
    assert final[1]["id"] == turn_id and client.message_id == turn_id
    assert [p["type"] for p in final[1]["parts"]] == [
        "tool-delete_file",
        "tool-read_title",
        "step-start",
        "text",
    ]
    assert count(tmp_path, "tool.delete_file") == 1  # never again, in any process

    # A predicate that resubmits the finished message is refused before any stream.
    with pytest.raises(RunNotWaitingError, match="is completed: there is no current"):
        processes("v-1", client).answer()


def test_partial_results_a_rejection_and_a_second_turn(
    processes: Callable[[str, ChatClient], Process], vercel_schema: VercelSchema
) -> None:
    client = ChatClient(vercel_schema, "v-2", "batch please")
    processes("v-2", client).new_turn()
    client.respond("call_a", True)
    client.respond("call_b", False, "not that page")
    client.respond("call_c", True)
    frames = processes("v-2", client).answer()
    dispatched = [f["toolCallId"] for f in frames if f["type"] == "tool-input-available"]
    assert dispatched == ["call_a", "call_c"]  # a rejected frontend call never runs

    client.add_tool_output("call_a", [1, "a"])
    assert processes("v-2", client).answer() == [{"type": "finish"}]
    reloaded = processes("v-2", client).reload()
    vercel_schema.messages(reloaded)
    assert reloaded[1] == comparable(client.assistant or {})
    states = [(p["toolCallId"], p["state"]) for p in reloaded[1]["parts"] if "toolCallId" in p]
    assert states == [
        ("call_a", "output-available"),
        ("call_b", "approval-responded"),
        ("call_c", "input-available"),
    ]

    client.assistant = reloaded[1]
    client.add_tool_output("call_c", error="tab closed")
    frames = processes("v-2", client).answer()
    assert [f for f in frames if f["type"].startswith("tool-")] == [
        {"type": "tool-output-denied", "toolCallId": "call_b"}
    ]
    first_turn = processes("v-2", client).reload()
    vercel_schema.messages(first_turn)
    expected = comparable(client.assistant or {}, settled=True)
    # call_c came back from the reload as input-available, a state that cannot carry
    # its approval; the settled history marks it approved again.
    expected["parts"][3]["approval"] = {"id": "call_c", "approved": True}
    assert first_turn[1] == expected

    # The next useChat request carries the whole history and a new user message.
    client.next_turn("u2", "hello")
    processes("v-2", client).new_turn()
    both = processes("v-2", client).reload()
    vercel_schema.messages(both)
    assert both[:2] == first_turn[:2]
    assert [m["id"] for m in both[2:]] == ["u2", client.message_id]
    assert both[3] == client.assistant
