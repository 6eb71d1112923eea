"""AGUIAdapter (reference 5.3; catalogue F 68, 71, 73 and G 87, 88, 94-97).

Every stream is checked by ``checked``: SSE-encoded, run through ag-ui-validate (no
errors, no warnings) and parsed with the ``ag_ui.core`` event models, allowing no field
the models do not know except the documented ``error`` of TOOL_CALL_RESULT.
``fold`` applies a stream the way the official ``@ag-ui/client`` 1.0 does, so tests can
send the next request with exactly what a real client would hold.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec, RunState
from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolCallInfo,
    ToolResultChunk,
)
from relayline.shared.errors import RunFailedError, StreamAdapterError
from relayline.shared.events import Custom, ProtocolEvent, StepStarted, StreamEvent
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.providers import ScriptedProvider
from relayline.shared.texts import PROVIDER_FAILED
from tests.support.agents import build_spec, count
from tests.support.agui import (
    CONFIRMATION,
    approval_spec,
    approve,
    as_client_holds,
    ask,
    attach,
    checked,
    collect,
    explode,
    fold,
    only,
    reply,
    same_shape,
    scripted,
    sent,
    stream,
    tool_reply,
    types,
    user,
)

# -- the adapter on its own -------------------------------------------------------------


def test_an_adapter_that_never_started_has_no_run_to_finish() -> None:
    assert AGUIAdapter("t").end() == []


def test_headers() -> None:
    assert AGUIAdapter("t").headers() == {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    }


def test_empty_deltas_are_skipped_and_messages_open_and_close_in_order() -> None:
    adapter = AGUIAdapter("t", "r")
    events = adapter.start()
    assert adapter.transform(TextChunk("m1", "")) == []
    assert adapter.transform(ReasoningChunk("m1", "")) == []
    for item in (
        ReasoningChunk("m1", "Hm"),
        TextChunk("m1", "Hi"),
        TextChunk("m2", "Yo"),
        ReasoningChunk("m3", "Ok"),
        ReasoningChunk("m4", "So"),
        TextChunk("m4", "Done"),
    ):
        events += adapter.transform(item)
    events += adapter.end()
    wire = checked(events)
    assert [(e["type"], e.get("messageId")) for e in wire[1:-1]] == [
        ("REASONING_START", "reasoning_m1"),
        ("REASONING_MESSAGE_START", "reasoning_m1"),
        ("REASONING_MESSAGE_CONTENT", "reasoning_m1"),
        ("REASONING_MESSAGE_END", "reasoning_m1"),
        ("REASONING_END", "reasoning_m1"),
        ("TEXT_MESSAGE_START", "m1"),
        ("TEXT_MESSAGE_CONTENT", "m1"),
        ("TEXT_MESSAGE_END", "m1"),
        ("TEXT_MESSAGE_START", "m2"),
        ("TEXT_MESSAGE_CONTENT", "m2"),
        ("TEXT_MESSAGE_END", "m2"),
        ("REASONING_START", "reasoning_m3"),
        ("REASONING_MESSAGE_START", "reasoning_m3"),
        ("REASONING_MESSAGE_CONTENT", "reasoning_m3"),
        ("REASONING_MESSAGE_END", "reasoning_m3"),
        ("REASONING_END", "reasoning_m3"),
        ("REASONING_START", "reasoning_m4"),
        ("REASONING_MESSAGE_START", "reasoning_m4"),
        ("REASONING_MESSAGE_CONTENT", "reasoning_m4"),
        ("REASONING_MESSAGE_END", "reasoning_m4"),
        ("REASONING_END", "reasoning_m4"),
        ("TEXT_MESSAGE_START", "m4"),
        ("TEXT_MESSAGE_CONTENT", "m4"),
        ("TEXT_MESSAGE_END", "m4"),
    ]
    assert wire[-1] == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    # Success is terminal: nothing more, and a second terminal is silent.
    assert adapter.transform(TextChunk("m5", "late")) == []
    assert adapter.end() == [] and adapter.error(RuntimeError()) == []


def test_tool_arguments_are_buffered_until_the_result() -> None:
    adapter = AGUIAdapter("t", "r")
    events = adapter.start()
    call = ToolCallInfo(call_id="c1", name="weather", inputs={"city": "Oslo"})
    for item in (
        ToolArgumentChunk("m1", "weather", "c1", '{"city":'),
        ToolArgumentChunk("m1", "weather", "c1", '"Oslo"}'),
        ToolCallChunk("m1", call),
    ):
        assert adapter.transform(item) == []  # a proposal never reaches the wire
    events += adapter.transform(ToolResultChunk(dataclasses.replace(call, result="sunny")))
    # A result that names its assistant message needs no earlier chunk for its parent.
    late = ToolCallInfo(call_id="c2", name="clock", inputs={}, result="12:00")
    events += adapter.transform(ToolResultChunk(late, message_id="m2"))
    events += adapter.end()
    wire = checked(events)
    assert wire[1:-1] == [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "weather",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"city":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"Oslo"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "result_c1",
            "role": "tool",
            "toolCallId": "c1",
            "content": "sunny",
        },
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c2",
            "toolCallName": "clock",
            "parentMessageId": "m2",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "result_c2",
            "role": "tool",
            "toolCallId": "c2",
            "content": "12:00",
        },
    ]


def test_a_result_for_a_call_the_client_holds_restates_the_history_once() -> None:
    held = [
        user("Read both", "u-1"),
        {"id": "m1", "role": "assistant", "content": "", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "browser", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "browser", "arguments": "{}"}},
        ]},
    ]  # fmt: skip
    adapter = AGUIAdapter("t", "r", held)
    events = adapter.start()
    for call_id in ("c1", "c2"):
        info = ToolCallInfo(call_id=call_id, name="browser", inputs={}, result="Page")
        events += adapter.transform(ToolResultChunk(info))
    wire = checked(events + adapter.end())
    assert types(wire) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert wire[1]["messages"] == held  # a no-op for the client: it holds exactly this
    assert [e["toolCallId"] for e in only(wire, "TOOL_CALL_RESULT")] == ["c1", "c2"]


def test_portable_events_and_unsupported_ones() -> None:
    adapter = AGUIAdapter("t", "r")
    assert [e.to_json() for e in adapter.transform(Custom("app:progress", {"pct": 5}))] == [
        {"type": "CUSTOM", "name": "app:progress", "value": {"pct": 5}}
    ]
    assert [e.to_json() for e in adapter.transform(StepStarted("plan"))] == [
        {"type": "STEP_STARTED", "stepName": "plan"}  # no metadata key when empty
    ]

    class Unknown(StreamEvent):
        pass

    with pytest.raises(StreamAdapterError, match="AGUIAdapter cannot encode stream event Unknown"):
        adapter.transform(Unknown())


def test_an_unknown_error_is_neutral_with_code_internal_and_idempotent() -> None:
    class Unavailable(Exception):
        code = 503  # an exception's own code is not a reason the client can act on

    adapter = AGUIAdapter("t", "r")
    events = adapter.start() + adapter.transform(TextChunk("m1", "Part"))
    events += adapter.error(Unavailable("upstream said: secret detail"))
    assert checked(events)[-2:] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_ERROR", "message": "The run failed.", "code": "internal"},
    ]
    assert adapter.error(RuntimeError()) == [] and adapter.end() == []
    assert adapter.transform(TextChunk("m1", "more")) == []


def test_a_generic_wait_publishes_its_string_interrupt_id() -> None:
    @dataclasses.dataclass(frozen=True)
    class OrderApproved:
        interrupt_id: int = 4
        message: str = "Waiting for order.approved"
        expires_at: None = None

        def to_json(self) -> dict[str, Any]:
            return {
                "interruptId": 4,
                "type": "wait_for_event",
                "eventName": "order.approved",
                "expiresAt": None,
                "message": self.message,
            }

    adapter = AGUIAdapter("t", "r", [user("Order it", "u-1")], {"step": 2})
    wire = checked(adapter.start() + adapter.interrupt(OrderApproved()))  # type: ignore[arg-type]
    assert types(wire) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert wire[-1]["outcome"]["interrupts"] == [
        {
            "id": "4",
            "reason": "tool_results",
            "message": "Waiting for order.approved",
            "metadata": OrderApproved().to_json(),
        }
    ]


# -- through the agent -----------------------------------------------------------------


def test_plain_answer_is_compliant_and_uses_the_stored_ids(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("plain", build_spec(tmp_path), sqlite_store)
    attach(agent, "client-run-1", [user("Hi", "u-1")])
    wire = stream(agent.stream(Message.user("Hi", id="u-1")))
    stored = agent.history()[-1]
    assert wire[0] == {"type": "RUN_STARTED", "runId": "client-run-1", "threadId": "plain"}
    assert wire[-1] == {"type": "RUN_FINISHED", "threadId": "plain", "runId": "client-run-1"}
    assert types(wire) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    text = [e for e in wire if e["type"].startswith("TEXT_MESSAGE")]
    assert {e["messageId"] for e in text} == {stored.id}
    assert "".join(e.get("delta", "") for e in text) == stored.text == "Hello! Hi"
    reasoning = [e for e in wire if e["type"].startswith("REASONING")]
    assert {e["messageId"] for e in reasoning} == {f"reasoning_{stored.id}"}
    assert all(e["delta"] for e in wire if "delta" in e)
    assert [e["stepName"] for e in only(wire, "STEP_STARTED")] == ["model"]


def test_run_id_is_generated_when_the_client_sends_none(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("gen", build_spec(tmp_path), sqlite_store)
    agent.set_stream_adapter(lambda: AGUIAdapter("gen"))
    wire = stream(agent.stream("Hi"))
    assert wire[0]["runId"].startswith("run_") and wire[-1]["runId"] == wire[0]["runId"]


def test_backend_tool_is_published_only_with_its_result(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("weather", build_spec(tmp_path), sqlite_store)
    attach(agent, "r-1", [user("Weather?", "u-1")])
    wire = stream(agent.stream(Message.user("Weather?", id="u-1")))
    proposal, answer = agent.history()[1], agent.history()[3]
    assert types(wire, steps=True) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "ACTIVITY_SNAPSHOT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert wire[1] == {"type": "STEP_STARTED", "stepName": "model", "metadata": {"step": 1}}
    running = {"callId": "call_w", "toolName": "weather", "status": "running", "durationMs": 0}
    assert wire[3] == {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "activity_call_w",
        "activityType": "tool",
        "content": running,
        "replace": True,
    }
    assert wire[4]["content"]["status"] == "ok"
    calls = [e for e in wire if e["type"].startswith("TOOL_CALL")]
    assert calls[0] == {
        "type": "TOOL_CALL_START",
        "toolCallId": "call_w",
        "toolCallName": "weather",
        "parentMessageId": proposal.id,
    }
    # The model's own argument deltas, held back until the call ran.
    assert "".join(e["delta"] for e in only(wire, "TOOL_CALL_ARGS")) == '{"city":"Oslo"}'
    assert calls[-2:] == [
        {"type": "TOOL_CALL_END", "toolCallId": "call_w"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "result_call_w",
            "role": "tool",
            "toolCallId": "call_w",
            "content": "sunny in Oslo",
        },
    ]
    assert {e["messageId"] for e in wire if e["type"].startswith("TEXT")} == {answer.id}


def test_backend_tool_error_keeps_the_error_marker(sqlite_store: Store) -> None:
    call = {"id": "c1", "name": "explode", "arguments": {"reason": "boom"}}
    spec = AgentSpec(provider=scripted({"tool_calls": [call]}, {"text": "Saw it"}), tools=[explode])
    agent = Agent("boom", spec, sqlite_store)
    attach(agent, "r-1")
    (result,) = only(stream(agent.stream("go")), "TOOL_CALL_RESULT")
    assert result == {
        "type": "TOOL_CALL_RESULT",
        "messageId": "result_c1",
        "role": "tool",
        "toolCallId": "c1",
        "content": "RuntimeError: boom",
        "error": "RuntimeError: boom",
    }


def test_frontend_handoff_publishes_the_call_and_finishes_without_outcome(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("title", build_spec(tmp_path), sqlite_store)
    attach(agent, "r-1", [user("Title?", "u-1")])
    wire = stream(agent.stream(Message.user("Title?", id="u-1")))
    assert types(wire) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    parent = agent.history()[1].id
    assert wire[-4:] == [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "call_t",
            "toolCallName": "read_title",
            "parentMessageId": parent,
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "call_t", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "call_t"},
        {"type": "RUN_FINISHED", "threadId": "title", "runId": "r-1"},
    ]


def test_continuation_gets_fresh_framing_and_never_echoes_what_the_client_holds(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("cont", build_spec(tmp_path), sqlite_store)
    first = attach(agent, "r-1", [user("Title?", "u-1")])
    held = fold([user("Title?", "u-1")], stream(agent.stream(Message.user("Title?", id="u-1"))))
    held.append(tool_reply("call_t", "Report"))
    then = attach(agent, "r-2", held)
    second = stream(agent.submit_inputs({"messages": sent(held)}, AGUIInputTranslator()).events())
    assert len(first) == len(then) == 1 and first[0] is not then[0]  # one per segment
    assert second[0] == {"type": "RUN_STARTED", "runId": "r-2", "threadId": "cont"}
    assert types(second) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert not any(e["type"].startswith("TOOL_CALL") for e in second)
    assert agent.history()[-1].text == "The title is Report."


def test_approval_is_a_confirmation_interrupt_after_the_snapshots(sqlite_store: Store) -> None:
    agent = Agent("appr", approval_spec(), sqlite_store)
    older = [
        user("Earlier", "u-0"),
        {"id": "a-0", "role": "assistant", "content": "Earlier answer"},
    ]
    messages = [*older, user("Remove a.txt", "u-1")]
    attach(agent, "r-1", messages, {"theme": "dark"})
    wire = stream(agent.stream(Message.user("Remove a.txt", id="u-1")))
    assert types(wire) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]  # no TOOL_CALL_START: an unapproved call must not be executable by the client
    proposal = agent.history()[-1]
    assert only(wire, "STATE_SNAPSHOT")[0]["snapshot"] == {"theme": "dark"}
    assert only(wire, "MESSAGES_SNAPSHOT")[0]["messages"] == [
        *messages,
        {"id": f"reasoning_{proposal.id}", "role": "reasoning", "content": "They want it gone."},
        {"id": proposal.id, "role": "assistant", "content": "Removing it."},
    ]
    assert wire[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "appr",
        "runId": "r-1",
        "outcome": {"type": "interrupt", "interrupts": [CONFIRMATION]},
    }
    # The confirmation id is what the client resumes with.
    second, _ = reply(agent, "r-2", fold(messages, wire), resume=approve(CONFIRMATION["id"]))
    (result,) = only(second, "TOOL_CALL_RESULT")
    assert result["content"] == "a.txt removed" and "error" not in result
    assert second[0]["runId"] == "r-2" and "outcome" not in second[-1]
    assert agent.history()[-1].text == "Done: a.txt removed"


def test_rejection_is_a_plain_instruction_and_inference_continues(sqlite_store: Store) -> None:
    agent = Agent("rej", approval_spec(), sqlite_store)
    _, held = ask(agent, "r-1", [], "Remove a.txt", "u-1")
    decision = {"approved": False, "reason": "Not now"}
    resume = [{"interruptId": "call_x", "status": "resolved", "payload": decision}]
    wire, _ = reply(agent, "r-2", held, resume=resume)
    assert types(wire)[:5] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ]
    (result,) = only(wire, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "call_x" and "error" not in result
    assert "TOOL NOT EXECUTED" in result["content"] and "Not now" in result["content"]
    assert agent.history()[-1].text.startswith("Done: TOOL NOT EXECUTED")


def test_partial_results_do_not_redispatch_held_calls(sqlite_store: Store, tmp_path: Path) -> None:
    agent = Agent("batch", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-1", [], "batch", "u-1")
    dispatch, held = reply(agent, "r-2", held, resume=approve("call_a", "call_b", "call_c"))
    calls = [e["toolCallId"] for e in only(dispatch, "TOOL_CALL_START")]
    assert calls == ["call_a", "call_b", "call_c"]
    wire, _ = reply(agent, "r-3", [*held, tool_reply("call_a", "Page A")])
    assert types(wire) == ["RUN_STARTED", "RUN_FINISHED"]  # b and c are already held
    state = agent.state()
    assert state is not None and state.interrupt is not None
    assert state.interrupt.pending_ids == ["call_b", "call_c"]


def test_failure_before_output_reaches_pull_and_push_as_run_error(sqlite_store: Store) -> None:
    agent = Agent("fail0", AgentSpec(provider=scripted({"error": "model down"})), sqlite_store)
    pushed = attach_channel(agent)
    attach(agent, "r-1")
    wire, failure = collect(agent.stream("hi"))
    assert failure is not None
    assert types(wire) == ["RUN_STARTED", "RUN_ERROR"]
    # the failure's code and a neutral text (the provider's own may name its hosts),
    # pulled and pushed alike
    assert wire[-1] == {"type": "RUN_ERROR", "message": PROVIDER_FAILED, "code": "provider_error"}
    assert [e.to_json() for e in pushed] == wire
    assert "model down" not in json.dumps(wire)


def test_failure_after_output_closes_the_text_first(sqlite_store: Store) -> None:
    spec = AgentSpec(provider=scripted({"text": "partial", "error": "model down"}))
    agent = Agent("fail1", spec, sqlite_store)
    pushed = attach_channel(agent)
    attach(agent, "r-1")
    wire, failure = collect(agent.stream("hi"))
    assert failure is not None
    assert types(wire) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_ERROR",
    ]
    assert [e.to_json() for e in pushed] == wire
    state = agent.state()
    assert state is not None and state.status == "failed"


def attach_channel(agent: Agent) -> list[ProtocolEvent]:
    """Record what a push channel receives."""
    pushed: list[ProtocolEvent] = []

    class Recorder:
        def send(self, event: ProtocolEvent) -> None:
            pushed.append(event)

        def completed(self, state: RunState, workflow_id: str) -> None: ...

        def interrupted(self, state: RunState, workflow_id: str) -> None: ...

        def failed(self, error: BaseException, workflow_id: str) -> None: ...

    agent.set_channel(Recorder)
    return pushed


def test_live_ids_equal_stored_ids_for_frontend_calls(sqlite_store: Store, tmp_path: Path) -> None:
    agent = Agent("ids", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-1", [], "Title?", "u-1")
    _, held = reply(agent, "r-2", [*held, tool_reply("call_t", "Report")])
    hydrated = AGUIAdapter.hydrate(agent.history(), agent.inspect())["messages"]
    live_ids = [m["id"] for m in held if m["role"] != "tool"]
    assert live_ids == [m["id"] for m in hydrated if m["role"] != "tool"]
    assert held[1]["toolCalls"][0]["id"] == "call_t"


def test_live_parent_ids_equal_stored_ids_after_approval(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("ids2", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-1", [], "Delete", "u-1")
    wire, held = reply(agent, "r-2", held, resume=approve("call_d"))
    parent = agent.history()[1].id
    # The approved backend call is published with its result under the stored message;
    # the frontend call handed off after the approval goes out without a parent, so the
    # client files it under the call's own id, a message new to this run (CopilotKit
    # executes only the calls of messages that are new to a run).
    assert [e.get("parentMessageId") for e in only(wire, "TOOL_CALL_START")] == [parent, None]
    assert count(tmp_path, "tool.delete_file") == 1
    _, held = reply(agent, "r-3", [*held, tool_reply("call_t", "Report")])
    # What the client built live is what a reload rebuilds, but for two things: the id of
    # the tool message the client itself minted (a result is identified by its call),
    # and the frontend call the client filed under its own id.
    reloaded = AGUIAdapter.hydrate(agent.history(), agent.inspect())["messages"]
    held = [{**m, "id": f"result_{m['toolCallId']}"} if m["role"] == "tool" else m for m in held]
    holder = next(m for m in held if m["id"] == "call_t")
    held.remove(holder)
    owner = next(m for m in held if m["id"] == parent)
    owner["toolCalls"] = [*owner.get("toolCalls", []), *holder["toolCalls"]]
    assert as_client_holds(reloaded) == same_shape(held)


def test_a_failed_model_step_is_closed_before_run_error(sqlite_store: Store) -> None:
    spec = AgentSpec(
        provider=ScriptedProvider(
            {"rules": [{"match": "", "steps": [{"tool_calls": [{"name": "nope"}]}]}]}
        )
    )
    agent = Agent("unknown-tool", spec, sqlite_store)
    agent.set_stream_adapter(lambda: AGUIAdapter("unknown-tool", "r-1"))
    events: list[ProtocolEvent] = []
    with pytest.raises(RunFailedError):
        for event in agent.stream("call it"):
            events.append(event)
    wire = checked(events)
    assert [e["type"] for e in wire] == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "RUN_ERROR",
    ]


def test_binding_the_segment_run_keeps_the_clients_run_id() -> None:
    # The segment names relayline's run on every adapter; AG-UI's frames keep the
    # client's own runId.
    adapter = AGUIAdapter("t1", "client-run-1")
    adapter.bind_run("run_relayline")
    assert adapter.start()[0].data["runId"] == "client-run-1"
    assert adapter.end()[-1].data == {"threadId": "t1", "runId": "client-run-1"}
