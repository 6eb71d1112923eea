"""AG-UI round trips on SQLite and a real PostgreSQL, every request on a fresh Agent.

``Client`` plays the official ``@ag-ui/client``: it posts ``RunAgentInput`` bodies,
folds each stream into its messages, keeps the interrupts of RUN_FINISHED, and can be
rebuilt from a reload (``GET /agui/threads/<id>``). The endpoint side is what the web
route does: decide new turn or continuation by the body's shape, translate it with
AGUIInputTranslator, attach a fresh AGUIAdapter seeded with the client's messages.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.interrupts import CANCELLED_ERROR
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.web.agui import agui_thread_payload
from tests.support.agents import build_spec, count
from tests.support.agui import (
    Wire,
    as_client_holds,
    fold,
    only,
    same_shape,
    sent,
    stream,
    types,
)

pytestmark = pytest.mark.integration

_runs = itertools.count(1)


@dataclasses.dataclass
class Client:
    thread_id: str
    messages: Wire = dataclasses.field(default_factory=list)
    interrupts: Wire = dataclasses.field(default_factory=list)

    @classmethod
    def reloaded(cls, store: Store, thread_id: str) -> Client:
        page = agui_thread_payload(store, thread_id)
        # Plain dicts, as the client parses them (it folds into what it holds).
        messages, interrupts = page["messages"], page["interrupts"]
        return cls(thread_id, [dict(m) for m in messages], [dict(i) for i in interrupts])

    def body(self, resume: Wire | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "threadId": self.thread_id,
            "runId": f"client-run-{next(_runs)}",
            "protocolVersion": "1.0",
            "state": {},
            "messages": sent(self.messages),
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
        if resume is not None:
            body["resume"] = resume
        return body

    def say(self, store: Store, spec: AgentSpec, text: str, message_id: str) -> Wire:
        self.messages.append({"id": message_id, "role": "user", "content": text})
        return self.post(store, spec, self.body())

    def post(self, store: Store, spec: AgentSpec, body: dict[str, Any]) -> Wire:
        agent = Agent(self.thread_id, spec, store)
        seeded = body["messages"]
        agent.set_stream_adapter(
            lambda: AGUIAdapter(self.thread_id, body["runId"], seeded, body["state"])
        )
        translator = AGUIInputTranslator()
        if translator.is_continuation(body):
            wire = stream(agent.submit_inputs(body, translator).events())
        else:
            turn = translator.new_turn_message(body)
            wire = stream(agent.stream(Message.user(turn["content"], id=turn["id"])))
        assert wire[0]["runId"] == wire[-1]["runId"] == body["runId"]
        self.messages = fold(self.messages, wire)
        outcome = wire[-1].get("outcome") or {}
        self.interrupts = outcome.get("interrupts", [])
        return wire

    def pending_calls(self, wire: Wire) -> list[str]:
        """Calls the client runs after a handoff: started in the run, with no result."""
        answered = {e["toolCallId"] for e in only(wire, "TOOL_CALL_RESULT")}
        return [
            e["toolCallId"]
            for e in only(wire, "TOOL_CALL_START")
            if e["toolCallId"] not in answered
        ]

    def answer(self, call_id: str, content: str) -> None:
        tool_message = {
            "id": f"tm-{call_id}",
            "role": "tool",
            "toolCallId": call_id,
            "content": content,
        }
        self.messages.append(tool_message)


def approve_all(client: Client) -> Wire:
    return [
        {"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
        for i in client.interrupts
    ]


def test_approval_then_frontend_tool(store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    client = Client("agui-1")
    first = client.say(store, spec, "Delete the report", "u-1")
    assert not only(first, "TOOL_CALL_START")  # nothing executable before approval
    assert [i["reason"] for i in client.interrupts] == ["confirmation"]
    assert count(tmp_path, "tool.delete_file") == 0

    second = client.post(store, spec, client.body(resume=approve_all(client)))
    assert [e["content"] for e in only(second, "TOOL_CALL_RESULT")] == ["r.pdf deleted"]
    assert "outcome" not in second[-1]  # a plain frontend handoff
    assert client.pending_calls(second) == ["call_t"]
    assert count(tmp_path, "tool.delete_file") == 1
    run = store.current_run("agui-1")
    assert run is not None and run.status == "suspended"

    client.answer("call_t", "Report")
    third = client.post(store, spec, client.body())
    assert types(third) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]  # neither the call nor the result the client sent is echoed
    assert (
        client.messages[-1]["content"] == 'Finished: {"call_d":"r.pdf deleted","call_t":"Report"}'
    )
    assert count(tmp_path, "tool.delete_file") == 1 and count(tmp_path, "model") == 2
    reload = agui_thread_payload(store, "agui-1")
    assert reload["status"] is None and reload["interrupts"] == []
    assert [m["id"] for m in reload["messages"] if m["role"] == "tool"] == [
        "result_call_d",
        "result_call_t",
    ]
    # The reload rebuilds what the client built live, ids included, but for two things:
    # the tool message the client minted itself is named by its call on reload, and the
    # frontend call handed off after the approval went out under a message new to the
    # client (CopilotKit runs only those), which the reload shows under the stored one.
    held = [
        {**m, "id": f"result_{m['toolCallId']}"} if m["role"] == "tool" else m
        for m in client.messages
    ]

    def holding(call_id: str) -> dict[str, Any]:
        return next(m for m in held if call_id in [c["id"] for c in m.get("toolCalls", [])])

    holder, owner = holding("call_t"), holding("call_d")
    assert holder is not owner
    held.remove(holder)
    owner["toolCalls"] = [*owner["toolCalls"], *holder["toolCalls"]]
    assert as_client_holds(reload["messages"]) == same_shape(held)


def test_reload_mid_approval_then_resume_with_the_reloaded_ids(
    store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    live = Client("agui-2")
    first = live.say(store, spec, "Delete the report", "u-1")
    (snapshot,) = only(first, "MESSAGES_SNAPSHOT")

    reloaded = Client.reloaded(store, "agui-2")
    assert reloaded.messages == snapshot["messages"] == live.messages
    assert reloaded.interrupts == live.interrupts
    assert agui_thread_payload(store, "agui-2")["status"] == "suspended"

    second = reloaded.post(store, spec, reloaded.body(resume=approve_all(reloaded)))
    assert [e["toolCallId"] for e in only(second, "TOOL_CALL_RESULT")] == ["call_d"]
    assert reloaded.pending_calls(second) == ["call_t"]
    assert count(tmp_path, "tool.delete_file") == 1


@pytest.mark.parametrize("outcome", ["resolved", "cancelled"])
def test_reload_mid_frontend_wait_then_resume(store: Store, tmp_path: Path, outcome: str) -> None:
    spec = build_spec(tmp_path)
    live = Client("agui-3")
    live.say(store, spec, "Delete the report", "u-1")
    live.post(store, spec, live.body(resume=approve_all(live)))

    reloaded = Client.reloaded(store, "agui-3")
    (interrupt,) = reloaded.interrupts
    assert interrupt["reason"] == "tool_results"
    assert [c["callId"] for c in interrupt["metadata"]["toolCalls"]] == ["call_t"]
    # Already settled in the live stream, so the reload shows it with its result.
    assert [m["id"] for m in reloaded.messages if m["role"] == "tool"] == ["result_call_d"]

    entry: dict[str, Any] = {"interruptId": interrupt["id"], "status": outcome}
    if outcome == "resolved":
        entry["payload"] = {"call_t": {"result": "Report"}}
    final = reloaded.post(store, spec, reloaded.body(resume=[entry]))
    (result,) = only(final, "TOOL_CALL_RESULT")
    if outcome == "resolved":
        assert result["content"] == "Report" and "error" not in result
    else:
        assert result["content"] == result["error"] == CANCELLED_ERROR
    assert not only(final, "TOOL_CALL_START")

    again = agui_thread_payload(store, "agui-3")
    assert again["status"] is None and again["interrupts"] == []
    assert as_client_holds(again["messages"]) == same_shape(reloaded.messages)
    assert count(tmp_path, "tool.delete_file") == 1
