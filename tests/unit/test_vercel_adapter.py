"""VercelAIAdapter: the UI message stream (reference 5.4; catalogue 68, 72, 73, 81-86,
89-93, 96).

Every stream these tests produce goes through the real ``ai`` package
(tests/node/vercel-schema/check.mjs): each chunk must parse under its chunk schema with
no unknown field, and the chunks must assemble into a UI message with
``readUIMessageStream``. Continuations start from the message the package assembled,
changed the way ``useChat`` changes it, so the harness is the client the adapter serves.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import AgentSpec, tool
from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolCallInfo,
    ToolResultChunk,
)
from relayline.shared.errors import RunFailedError, StreamAdapterError
from relayline.shared.events import Activity, Custom, ProtocolEvent, StreamEvent
from relayline.shared.interrupts import ApprovalRequest, PendingCall, ToolResultsRequest
from relayline.shared.persistence import Store
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator
from relayline.shared.texts import PROVIDER_FAILED
from tests.support.agents import build_spec, count
from tests.support.vercel import (
    FAILED,
    FINISH,
    ChatClient,
    VercelSchema,
    kinds,
    run,
    scripted,
    vercel_agent,
)

CALL = ToolCallInfo(call_id="call_7", name="delete_file", inputs={"path": "/data/x"})


# -- the adapter on its own ------------------------------------------------------------


def test_headers_framing_and_a_neutral_error_that_ends_everything(
    vercel_schema: VercelSchema,
) -> None:
    adapter = VercelAIAdapter()
    assert adapter.headers() == {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "x-vercel-ai-ui-message-stream": "v1",
    }
    assert adapter.start() == []
    assert [f.to_json() for f in adapter.end()] == [FINISH]

    failing = VercelAIAdapter()
    frames = run(failing, TextChunk("msg_1", "Hi"))
    frames += [f.to_json() for f in failing.error(RuntimeError("database password leaked"))]
    assert frames[-2:] == [{"type": "text-end", "id": "text_msg_1"}, FAILED]
    assert "password" not in json.dumps(frames)
    assert vercel_schema.frames(frames)["errors"] == ["The run failed."]
    request = ToolResultsRequest(1, (PendingCall("call_7", "read_title", {}),))
    assert failing.transform(TextChunk("msg_1", "more")) == []
    assert failing.end() == [] and failing.interrupt(request) == []
    assert failing.error(RuntimeError("again")) == []


def test_text_and_reasoning_parts_have_stable_ids_and_close_each_other(
    vercel_schema: VercelSchema,
) -> None:
    frames = run(
        VercelAIAdapter(),
        TextChunk("msg_1", "Hel"),
        TextChunk("msg_1", "lo"),
        ReasoningChunk("msg_1", "Hm"),
        TextChunk("msg_1", ""),
        TextChunk("msg_1", "!"),
        TextChunk("msg_2", "?"),
    )
    assert frames == [
        {"type": "start", "messageId": "msg_1"},
        {"type": "text-start", "id": "text_msg_1"},
        {"type": "text-delta", "id": "text_msg_1", "delta": "Hel"},
        {"type": "text-delta", "id": "text_msg_1", "delta": "lo"},
        {"type": "text-end", "id": "text_msg_1"},
        {"type": "reasoning-start", "id": "reasoning_msg_1"},
        {"type": "reasoning-delta", "id": "reasoning_msg_1", "delta": "Hm"},
        {"type": "reasoning-end", "id": "reasoning_msg_1"},
        {"type": "text-start", "id": "text_msg_1_2"},
        {"type": "text-delta", "id": "text_msg_1_2", "delta": "!"},
        {"type": "text-end", "id": "text_msg_1_2"},  # another source message
        {"type": "text-start", "id": "text_msg_2"},
        {"type": "text-delta", "id": "text_msg_2", "delta": "?"},
    ]
    assert [p["type"] for p in vercel_schema.frames(frames)["message"]["parts"]] == [
        "text",
        "reasoning",
        "text",
        "text",
    ]
    # The given message id wins over the chunk's.
    assert run(VercelAIAdapter("msg_ui"), TextChunk("msg_1", "x"))[0]["messageId"] == "msg_ui"


def test_a_tool_call_is_previewed_never_dispatched(vercel_schema: VercelSchema) -> None:
    empty = ToolCallInfo(call_id="call_8", name="read_title", inputs={}, deferred=True)
    frames = run(VercelAIAdapter(), ToolCallChunk("msg_1", CALL), ToolCallChunk("msg_1", empty))
    assert frames == [
        {"type": "start", "messageId": "msg_1"},
        {"type": "tool-input-start", "toolCallId": "call_7", "toolName": "delete_file"},
        {
            "type": "tool-input-delta",
            "toolCallId": "call_7",
            "inputTextDelta": '{"path":"/data/x"}',
        },
        {"type": "tool-input-start", "toolCallId": "call_8", "toolName": "read_title"},
        {"type": "tool-input-delta", "toolCallId": "call_8", "inputTextDelta": "{}"},
    ]
    parts = vercel_schema.frames(frames)["message"]["parts"]
    assert [p["state"] for p in parts] == ["input-streaming", "input-streaming"]


def test_streamed_arguments_start_once_and_the_result_reuses_the_call_id(
    vercel_schema: VercelSchema,
) -> None:
    info = ToolCallInfo(call_id="call_w", name="weather", inputs={"city": "Oslo"})
    frames = run(
        VercelAIAdapter(),
        TextChunk("msg_1", "Let me see."),
        ToolArgumentChunk("msg_1", "weather", "call_w", '{"ci'),
        ToolArgumentChunk("msg_1", "weather", "call_w", 'ty":"Oslo"}'),
        ToolCallChunk("msg_1", info),
        ToolResultChunk(dataclasses.replace(info, result="sunny")),
    )
    assert frames[3:] == [
        {"type": "text-end", "id": "text_msg_1"},
        {"type": "tool-input-start", "toolCallId": "call_w", "toolName": "weather"},
        {"type": "tool-input-delta", "toolCallId": "call_w", "inputTextDelta": '{"ci'},
        {"type": "tool-input-delta", "toolCallId": "call_w", "inputTextDelta": 'ty":"Oslo"}'},
        {"type": "tool-output-available", "toolCallId": "call_w", "output": "sunny"},
    ]
    assert vercel_schema.frames(frames)["message"]["parts"][1] == {
        "type": "tool-weather",
        "toolCallId": "call_w",
        "state": "output-available",
        "input": {"city": "Oslo"},
        "output": "sunny",
    }


def test_results_are_outputs_errors_or_denials(vercel_schema: VercelSchema) -> None:
    failed = dataclasses.replace(CALL, call_id="c1", result="no tab", is_error=True)
    denied = dataclasses.replace(CALL, call_id="c2", approval="rejected", result="NOT RUN")
    frames = run(VercelAIAdapter("m"), ToolResultChunk(failed), ToolResultChunk(denied))
    assert [f for f in frames if f["type"].startswith("tool-output")] == [
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "no tab"},
        {"type": "tool-output-denied", "toolCallId": "c2"},
    ]
    assert "tool-input-available" not in kinds(frames)
    vercel_schema.frames(frames)


def test_approval_wait_without_a_preview_previews_then_asks(vercel_schema: VercelSchema) -> None:
    adapter = VercelAIAdapter("msg_b71")
    request = ApprovalRequest(
        1, (PendingCall("call_7", "delete_file", {"path": "/data/x"}),), message="Delete report?"
    )
    frames = adapter.interrupt(request)
    assert vercel_schema.stream(frames)["message"]["parts"][0]["state"] == "approval-requested"
    assert [f.to_json() for f in frames] == [
        {"type": "start", "messageId": "msg_b71"},
        {"type": "tool-input-start", "toolCallId": "call_7", "toolName": "delete_file"},
        {
            "type": "tool-input-delta",
            "toolCallId": "call_7",
            "inputTextDelta": '{"path":"/data/x"}',
        },
        {
            "type": "tool-approval-request",
            "toolCallId": "call_7",
            "approvalId": "call_7",
            "reason": "Delete report?",
        },
        FINISH,
    ]


@dataclasses.dataclass(frozen=True)
class EventWait:
    """A wait that is neither for tool results nor for approvals."""

    interrupt_id: int = 3

    def to_json(self) -> dict[str, Any]:
        return {
            "interruptId": self.interrupt_id,
            "type": "wait_for_event",
            "eventName": "order.approved",
            "expiresAt": None,
        }


def test_other_waits_are_a_transient_data_part_and_silent_after_failure(
    vercel_schema: VercelSchema,
) -> None:
    frames = VercelAIAdapter().interrupt(EventWait())  # type: ignore[arg-type]
    assert [f.to_json() for f in frames] == [
        {"type": "data-workflow-interrupt", "data": EventWait().to_json(), "transient": True},
        FINISH,
    ]
    assert vercel_schema.stream(frames)["message"] is None  # nothing for the message
    failed = VercelAIAdapter()
    failed.error(RuntimeError("x"))
    assert failed.interrupt(EventWait()) == []  # type: ignore[arg-type]


class Progress:
    def __init__(self, done: int) -> None:
        self.done = done


def test_portable_events_are_transient_data_parts(vercel_schema: VercelSchema) -> None:
    adapter = VercelAIAdapter()
    adapter.map_event(Progress, lambda p: Custom("progress", {"done": p.done}) if p.done else None)
    activity = Activity("activity_c1", "tool", {"callId": "c1", "status": "running"})
    frames = run(adapter, activity, Custom("note", "hi"), Progress(0), Progress(3))
    vercel_schema.frames(frames)
    assert frames == [
        {
            "type": "data-workflow-activity",
            "data": {"id": "activity_c1", "type": "tool", "data": activity.data},
            "transient": True,
        },
        {"type": "data-note", "data": "hi", "transient": True},
        {"type": "data-progress", "data": {"done": 3}, "transient": True},
    ]  # data parts need no start
    with pytest.raises(StreamAdapterError, match="VercelAIAdapter cannot encode stream event"):
        adapter.transform(StreamEvent())


def test_each_inference_after_tool_results_is_a_new_step(vercel_schema: VercelSchema) -> None:
    first = ToolCallInfo(call_id="c1", name="weather", inputs={}, result="sun")
    second = dataclasses.replace(first, call_id="c2", result="rain")
    adapter = VercelAIAdapter()
    frames = adapter.start()
    for item in (
        TextChunk("m1", "Looking."),
        ToolCallChunk("m1", first),
        ToolResultChunk(first),
        ToolCallChunk("m2", second),  # an inference of calls only opens its step too
        ToolResultChunk(second),
        ReasoningChunk("m3", "Both known."),
    ):
        frames += adapter.transform(item)
    frames += adapter.end()
    assert [f.type for f in frames if f.type.endswith("step") or f.type == "finish"] == [
        "start-step",
        "finish-step",
        "start-step",
        "finish-step",
        "finish",
    ]
    message = vercel_schema.stream(frames)["message"]
    assert [p["type"] for p in message["parts"]] == [
        "text",
        "tool-weather",
        "step-start",
        "tool-weather",
        "step-start",
        "reasoning",
    ]


def test_seeded_parts_decide_what_is_known() -> None:
    parts = [
        None,
        {"type": "text", "text": "Working.", "toolCallId": "t0"},
        {"type": "tool-weather", "toolCallId": 5, "state": "output-available"},
        {"type": "tool-weather", "toolCallId": "c1", "state": "output-available", "output": 1},
        {"type": "dynamic-tool", "toolCallId": "c2", "state": "approval-responded"},
        {"type": "tool-browser", "toolCallId": "c3", "state": "input-streaming"},
    ]
    adapter = VercelAIAdapter("m", parts)
    result = ToolCallInfo(call_id="c1", name="weather", inputs={}, result="1")
    assert adapter.transform(ToolResultChunk(result)) == []  # the client's own output stays
    request = ApprovalRequest(
        2, (PendingCall("c3", "browser", {}),), decided={"c2": "approve"}, message="Open?"
    )
    assert kinds([f.to_json() for f in adapter.interrupt(request)]) == [
        "start",
        "tool-approval-request",  # c3's input was already streamed: no second preview
        "finish",
    ]  # c2 was answered by this client: no approval response for it


def test_success_closes_the_open_part_and_is_terminal(vercel_schema: VercelSchema) -> None:
    adapter = VercelAIAdapter()
    frames = run(adapter, ReasoningChunk("msg_1", "Hm"))
    frames += [f.to_json() for f in adapter.end()]
    assert frames[-2:] == [{"type": "reasoning-end", "id": "reasoning_msg_1"}, FINISH]
    assert vercel_schema.frames(frames)["message"]["parts"][0]["state"] == "done"
    assert adapter.transform(TextChunk("msg_1", "late")) == [] and adapter.end() == []


# -- whole runs through the public API, checked by the ai package ----------------------


def test_plain_answer_with_reasoning(sqlite_store: Store, vercel_schema: VercelSchema) -> None:
    spec = AgentSpec(provider=scripted({"reasoning": "Think.", "text": "Hi {{last_user_message}}"}))
    client = ChatClient(vercel_schema, "plain", "there")
    agent = vercel_agent(sqlite_store, "plain", spec, client)
    frames = client.receive(list(agent.stream("there")))
    stored = agent.history()[1]
    assert frames[0] == {
        "type": "data-workflow-step",
        "data": {"name": "model", "status": "started", "metadata": {"step": 1}},
        "transient": True,
    }  # portable data may come before start
    assert frames[1] == {"type": "start", "messageId": stored.id}
    assert kinds(frames)[-3:] == ["text-delta", "text-end", "finish"]
    assert client.assistant == {
        "id": stored.id,
        "role": "assistant",
        "parts": [
            {
                "type": "reasoning",
                "id": f"reasoning_{stored.id}",
                "text": "Think.",
                "state": "done",
            },
            {"type": "text", "text": "Hi there", "state": "done"},
        ],
    }


def test_backend_tool_then_answer_is_a_new_step(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    client = ChatClient(vercel_schema, "local", "weather?")
    agent = vercel_agent(sqlite_store, "local", build_spec(tmp_path), client)
    frames = client.receive(list(agent.stream("weather?")))
    activity = [
        f["data"]["data"]["status"] for f in frames if f["type"] == "data-workflow-activity"
    ]
    assert activity == ["running", "ok"]
    assert kinds(frames).count("tool-input-start") == 1
    output = {"type": "tool-output-available", "toolCallId": "call_w", "output": "sunny in Oslo"}
    assert output in frames
    shape = kinds(frames)
    assert (
        shape.index("tool-output-available") < shape.index("start-step") < shape.index("text-start")
    )
    assert shape[-3:] == ["text-end", "finish-step", "finish"]
    assert "start-step" not in shape[: shape.index("tool-output-available")]  # not before step 1
    assert client.assistant is not None
    assert [p["type"] for p in client.assistant["parts"]] == ["tool-weather", "step-start", "text"]
    assert client.assistant["id"] == agent.history()[1].id  # the turn's first assistant message


def test_frontend_handoff_and_continuation(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "front", "What is the title?")
    agent = vercel_agent(sqlite_store, "front", spec, client)
    frames = client.receive(list(agent.stream("What is the title?")))
    # Dispatched only once the run suspends, after the call is persisted.
    assert kinds(frames)[-2:] == ["tool-input-available", "finish"]
    assert frames[-2] == {
        "type": "tool-input-available",
        "toolCallId": "call_t",
        "toolName": "read_title",
        "input": {},
    }
    assert client.part("call_t")["state"] == "input-available"
    first_id = client.message_id

    client.add_tool_output("call_t", {"title": "Report"})  # a frontend-owned JSON output
    agent = vercel_agent(sqlite_store, "front", spec, client)  # a fresh process
    frames = client.receive(
        list(agent.submit_inputs(client.body(), VercelAIInputTranslator()).events())
    )
    assert kinds(frames)[:3] == ["start", "start-step", "text-start"]
    assert frames[[f["type"] for f in frames].index("start")]["messageId"] == first_id
    assert not any(f["type"].startswith("tool-") for f in frames)  # the known output stays
    assert kinds(frames)[-3:] == ["text-end", "finish-step", "finish"]
    assert client.part("call_t")["output"] == {"title": "Report"}
    assert client.assistant is not None and client.assistant["id"] == first_id
    assert client.assistant["parts"][1:] == [
        {"type": "step-start"},
        {"type": "text", "text": 'The title is {"title":"Report"}.', "state": "done"},
    ]


def test_a_partial_continuation_does_not_dispatch_again(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "part", "batch please")
    client.receive(list(vercel_agent(sqlite_store, "part", spec, client).stream("batch please")))
    for call_id in ("call_a", "call_b", "call_c"):
        client.respond(call_id, True)
    translate = VercelAIInputTranslator()
    agent = vercel_agent(sqlite_store, "part", spec, client)
    frames = client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    assert kinds(frames).count("tool-input-available") == 3

    client.add_tool_output("call_a", "A")
    frames = client.receive(list(agent.submit_inputs(client.body(), translate).events()))
    assert frames == [FINISH]  # b and c are already running in the browser
    state = agent.state()
    assert state is not None and state.interrupt is not None
    assert state.interrupt.pending_ids == ["call_b", "call_c"]
    # Without the client's parts the same wait would dispatch them a second time.
    assert (
        kinds([f.to_json() for f in VercelAIAdapter().interrupt(state.interrupt)]).count(
            "tool-input-available"
        )
        == 2
    )
    # An identical restatement is a no-op segment: fresh framing, finish only.
    assert client.receive(list(agent.submit_inputs(client.body(), translate).events())) == [FINISH]


def test_same_name_results_keep_their_call_ids(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "same", "batch please")
    agent = vercel_agent(sqlite_store, "same", spec, client)
    client.receive(list(agent.stream("batch please")))
    for call_id in ("call_a", "call_b", "call_c"):
        client.respond(call_id, True)
    client.receive(list(agent.submit_inputs(client.body(), VercelAIInputTranslator()).events()))
    # The results arrive through another route (native API): the client has none yet.
    results = {"call_a": {"result": "A"}, "call_b": {"result": {"n": 2}}, "call_c": {"error": "x"}}
    frames = client.receive(list(agent.submit_tool_results(results).events()))
    assert [f for f in frames if f["type"].startswith("tool-")] == [
        {"type": "tool-output-available", "toolCallId": "call_a", "output": "A"},
        {"type": "tool-output-available", "toolCallId": "call_b", "output": '{"n":2}'},
        {"type": "tool-output-error", "toolCallId": "call_c", "errorText": "x"},
    ]
    assert client.assistant is not None
    states = [(p["toolCallId"], p["state"]) for p in client.assistant["parts"] if "toolCallId" in p]
    assert states[:3] == [
        ("call_a", "output-available"),
        ("call_b", "output-available"),
        ("call_c", "output-error"),
    ]


def test_approval_round_trip_and_rejection(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    translate = VercelAIInputTranslator()
    for thread, approved in (("yes", True), ("no", False)):
        client = ChatClient(vercel_schema, thread, "Delete it")
        frames = client.receive(
            list(vercel_agent(sqlite_store, thread, spec, client).stream("Delete it"))
        )
        ask = {
            "type": "tool-approval-request",
            "toolCallId": "call_d",
            "approvalId": "call_d",
            "reason": "Approval required for: delete_file",
        }
        assert frames[-2:] == [ask, FINISH]
        assert client.part("call_d")["state"] == "approval-requested"
        assert client.part("call_t")["state"] == "input-streaming"  # previewed only

        client.respond("call_d", approved, None if approved else "keep it")
        agent = vercel_agent(sqlite_store, thread, spec, client)
        frames = client.receive(list(agent.submit_inputs(client.body(), translate).events()))
        outputs = [f for f in frames if f["type"].startswith("tool-output")]
        if approved:
            assert outputs == [
                {"type": "tool-output-available", "toolCallId": "call_d", "output": "r.pdf deleted"}
            ]
        else:
            assert outputs == []  # the denial is published with the batch's results
        assert kinds(frames)[-2:] == ["tool-input-available", "finish"]

        client.add_tool_output("call_t", "Report")
        frames = client.receive(list(agent.submit_inputs(client.body(), translate).events()))
        outputs = [f for f in frames if f["type"].startswith("tool-output")]
        assert outputs == (
            [] if approved else [{"type": "tool-output-denied", "toolCallId": "call_d"}]
        )
        assert client.part("call_d")["state"] == (
            "output-available" if approved else "output-denied"
        )
        assert client.part("call_t")["state"] == "output-available"
    assert count(tmp_path, "tool.delete_file") == 1


def test_a_decision_taken_elsewhere_reaches_the_waiting_client(
    sqlite_store: Store, vercel_schema: VercelSchema, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    client = ChatClient(vercel_schema, "tabs", "batch please")
    agent = vercel_agent(sqlite_store, "tabs", spec, client)
    client.receive(list(agent.stream("batch please")))
    decisions = {"call_a": "approve", "call_b": ["reject", "not B"]}
    frames = client.receive(list(agent.submit_approval_decisions(decisions).events()))
    assert [f for f in frames if f["type"] == "tool-approval-response"] == [
        {"type": "tool-approval-response", "approvalId": "call_a", "approved": True},
        {
            "type": "tool-approval-response",
            "approvalId": "call_b",
            "approved": False,
            "reason": "not B",
        },
    ]
    asks = [f["toolCallId"] for f in frames if f["type"] == "tool-approval-request"]
    assert asks == ["call_c"]
    assert client.part("call_a")["approval"] == {
        "id": "call_a",
        "requestReason": "Approval required for: browser, browser, browser",
        "approved": True,
    }
    assert client.part("call_b")["state"] == "approval-responded"
    assert client.part("call_c")["state"] == "approval-requested"


def test_failure_before_and_after_output(sqlite_store: Store, vercel_schema: VercelSchema) -> None:
    pushed: list[ProtocolEvent] = []

    class Recorder:
        def send(self, event: ProtocolEvent) -> None:
            pushed.append(event)

        def completed(self, state: Any, workflow_id: str) -> None: ...
        def interrupted(self, state: Any, workflow_id: str) -> None: ...
        def failed(self, error: BaseException, workflow_id: str) -> None: ...

    for thread, step in (
        ("early", {"error": "model down"}),
        ("late", {"text": "part", "error": "model down"}),
    ):
        client = ChatClient(vercel_schema, thread, "x")
        agent = vercel_agent(sqlite_store, thread, AgentSpec(provider=scripted(step)), client)
        agent.set_channel(Recorder)
        pulled: list[ProtocolEvent] = []
        with pytest.raises(RunFailedError):
            for frame in agent.stream("x"):
                pulled.append(frame)
        frames = client.receive(pulled)
        assert pushed[-len(pulled) :] == pulled  # the same frames reach push consumers
        # errorText only: the provider failed (its own text stays in the operator's log)
        assert frames[-1] == {"type": "error", "errorText": PROVIDER_FAILED}
        assert "finish" not in kinds(frames) and "model down" not in json.dumps(frames)
        assert client.errors == [PROVIDER_FAILED]
        if step.get("text"):
            assert kinds(frames)[-3:] == ["text-delta", "text-end", "error"]
        else:
            assert kinds(frames) == ["error"]


def test_redacted_arguments_are_previewed_masked(
    sqlite_store: Store, vercel_schema: VercelSchema
) -> None:
    @tool(requires_approval=True, redact=["password"])
    def login(user: str, password: str) -> str:
        """Log in."""
        return "ok"

    call = {"id": "c1", "name": "login", "arguments": {"user": "ann", "password": "s3cr3t"}}
    spec = AgentSpec(provider=scripted({"tool_calls": [call]}, {"text": "in"}), tools=[login])
    client = ChatClient(vercel_schema, "redact", "log in")
    frames = client.receive(list(vercel_agent(sqlite_store, "redact", spec, client).stream("x")))
    assert "s3cr3t" not in json.dumps(frames)
    assert client.part("c1")["input"] == {"user": "ann", "password": "***"}
    assert "tool-input-available" not in kinds(frames)
