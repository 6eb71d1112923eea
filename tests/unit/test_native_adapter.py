"""NativeAdapter: the native vocabulary (reference 5.1, 5.2; catalogue 76-79)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from relayline.shared.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolArgumentChunk,
    ToolCallChunk,
    ToolCallInfo,
    ToolResultChunk,
)
from relayline.shared.errors import StreamAdapterError
from relayline.shared.events import (
    Activity,
    Custom,
    ProtocolEvent,
    StepFinished,
    StepStarted,
    StreamEvent,
)
from relayline.shared.interrupts import ApprovalRequest, PendingCall, ToolResultsRequest
from relayline.shared.protocols.native import NativeAdapter

CALL = ToolCallInfo(call_id="call_7", name="read_title", inputs={}, deferred=True)


def events(item: Any) -> list[dict[str, Any]]:
    return [e.to_json() for e in NativeAdapter().transform(item)]


def test_headers() -> None:
    assert NativeAdapter().headers() == {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
    }


@pytest.mark.parametrize(
    ("chunk", "kind"),
    [
        (TextChunk("msg_1", "Hello"), "text"),
        (ReasoningChunk("msg_1", "Thinking"), "reasoning"),
        (ToolArgumentChunk("msg_1", "read_title", "call_7", '{"a":'), "tool-argument"),
        (ToolCallChunk("msg_1", CALL), "tool-call"),
        (ToolResultChunk(dataclasses.replace(CALL, result="Report")), "tool-result"),
    ],
)
def test_each_chunk_maps_to_one_event_with_its_payload(chunk: Any, kind: str) -> None:
    emitted = NativeAdapter().transform(chunk)
    assert emitted == [ProtocolEvent(kind, chunk.to_json())]


def test_chunk_payload_shapes() -> None:
    assert events(TextChunk("msg_1", "Hi")) == [
        {"type": "text", "messageId": "msg_1", "content": "Hi"}
    ]
    assert events(ReasoningChunk("msg_1", "Hm")) == [
        {"type": "reasoning", "messageId": "msg_1", "content": "Hm"}
    ]
    assert events(ToolArgumentChunk("msg_1", "read_title", "call_7", '{"a":')) == [
        {
            "type": "tool-argument",
            "messageId": "msg_1",
            "toolName": "read_title",
            "toolCallId": "call_7",
            "delta": '{"a":',
        }
    ]


def test_tool_call_and_result_carry_the_tool_json() -> None:
    expected_call: dict[str, Any] = {
        "callId": "call_7",
        "name": "read_title",
        "description": None,
        "deferred": True,
        "inputs": {},
        "result": None,
        "approval": None,
        "approvalReason": None,
        "rejectReason": None,
    }
    assert events(ToolCallChunk("msg_1", CALL)) == [
        {"type": "tool-call", "messageId": "msg_1", "tool": expected_call}
    ]
    done = dataclasses.replace(CALL, inputs={"q": 1}, result="Report")
    assert events(ToolResultChunk(done, message_id="msg_9")) == [
        {
            "type": "tool-result",
            "messageId": None,
            "tool": {**expected_call, "inputs": {"q": 1}, "result": "Report"},
        }
    ]
    failed = dataclasses.replace(CALL, result="boom", is_error=True)
    [event] = events(ToolResultChunk(failed))
    assert event["tool"]["callId"] == "call_7"
    assert event["tool"]["result"] == {"error": "boom"}


def test_portable_events_have_stable_shapes() -> None:
    assert events(StepStarted("plan")) == [{"type": "step-started", "name": "plan", "metadata": {}}]
    assert events(StepFinished("plan", {"n": 1})) == [
        {"type": "step-finished", "name": "plan", "metadata": {"n": 1}}
    ]
    assert events(Activity("act_1", "tool_running")) == [
        {"type": "activity", "id": "act_1", "activityType": "tool_running", "data": {}}
    ]
    assert events(Activity("act_1", "progress", {"pct": 50})) == [
        {"type": "activity", "id": "act_1", "activityType": "progress", "data": {"pct": 50}}
    ]
    assert events(Custom("ping")) == [{"type": "custom", "name": "ping", "value": None}]
    assert events(Custom("score", [1, 2])) == [{"type": "custom", "name": "score", "value": [1, 2]}]


def test_interrupt_nests_a_tool_results_request() -> None:
    request = ToolResultsRequest(
        interrupt_id=1,
        tool_calls=(PendingCall("call_7", "read_title", {}),),
        accepted={"call_6": {"result": "x"}},
    )
    assert NativeAdapter().interrupt(request) == [
        ProtocolEvent(
            "interrupt",
            {
                "request": {
                    "interruptId": 1,
                    "type": "wait_for_event",
                    "eventName": "tool_results",
                    "expiresAt": None,
                    "message": "Waiting for external tool results",
                    "toolCalls": [
                        {
                            "callId": "call_7",
                            "name": "read_title",
                            "description": None,
                            "deferred": True,
                            "inputs": {},
                            "result": None,
                            "approval": None,
                            "approvalReason": None,
                            "rejectReason": None,
                        }
                    ],
                }
            },
        )
    ]


def test_interrupt_request_key_order_and_expiry() -> None:
    request = ToolResultsRequest(
        interrupt_id=2,
        tool_calls=(PendingCall("c", "t", {"a": 1}, description="T"),),
        expires_at=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    [event] = NativeAdapter().interrupt(request)
    assert list(event.to_json()) == ["type", "request"]
    nested = event.data["request"]
    assert list(nested) == [
        "interruptId",
        "type",
        "eventName",
        "expiresAt",
        "message",
        "toolCalls",
    ]
    assert list(nested["toolCalls"][0]) == [
        "callId",
        "name",
        "description",
        "deferred",
        "inputs",
        "result",
        "approval",
        "approvalReason",
        "rejectReason",
    ]
    assert nested["expiresAt"] == "2030-01-02T03:04:05+00:00"
    assert nested["toolCalls"][0]["inputs"] == {"a": 1}
    assert nested["toolCalls"][0]["description"] == "T"


def test_interrupt_nests_an_approval_request() -> None:
    request = ApprovalRequest(
        interrupt_id=3,
        actions=(PendingCall("call_1", "delete_file", {"path": "r.pdf"}, "Delete a file."),),
        message="Approve deleting r.pdf?",
    )
    [event] = NativeAdapter().interrupt(request)
    assert event.type == "interrupt"
    assert event.data == {"request": request.to_json()}
    assert event.data["request"]["eventName"] == "approval"
    assert event.data["request"]["actions"][0]["id"] == "call_1"
    assert event.to_json()["type"] == "interrupt"


def test_an_unknown_error_is_neutral_and_overridable() -> None:
    assert NativeAdapter().error(RuntimeError("secret database password")) == [
        ProtocolEvent("error", {"message": "The run failed.", "code": "internal"})
    ]

    class Friendly(NativeAdapter):
        error_message = "Something went wrong, try again."

    assert Friendly().error(RuntimeError("x")) == [
        ProtocolEvent("error", {"message": "Something went wrong, try again.", "code": "internal"})
    ]


def test_start_and_end_are_empty() -> None:
    adapter = NativeAdapter()
    assert adapter.start() == []
    assert adapter.end() == []


def test_unknown_objects_are_ignored() -> None:
    adapter = NativeAdapter()
    assert adapter.transform(object()) == []
    assert adapter.transform("text") == []
    assert adapter.transform({"type": "text"}) == []


@dataclasses.dataclass(frozen=True)
class Progress:
    pct: int


class SubProgress(Progress):
    pass


def test_exact_class_mapping() -> None:
    adapter = NativeAdapter()
    adapter.map_event(Progress, lambda p: Custom("progress", p.pct))
    assert adapter.transform(Progress(40)) == [
        ProtocolEvent("custom", {"name": "progress", "value": 40})
    ]
    assert adapter.transform(SubProgress(50)) == []


def test_mapper_can_suppress_a_chunk() -> None:
    adapter = NativeAdapter()
    adapter.map_event(ReasoningChunk, lambda chunk: None)
    assert adapter.transform(ReasoningChunk("m", "hidden")) == []
    assert adapter.transform(TextChunk("m", "shown")) != []


def test_mapper_can_replace_a_chunk() -> None:
    adapter = NativeAdapter()
    adapter.map_event(TextChunk, lambda chunk: StepStarted(chunk.content))
    assert adapter.transform(TextChunk("m", "s1")) == [
        ProtocolEvent("step-started", {"name": "s1", "metadata": {}})
    ]


def test_mapper_returning_a_non_stream_event_raises() -> None:
    adapter = NativeAdapter()
    adapter.map_event(Progress, lambda p: {"type": "custom"})  # type: ignore[arg-type,return-value]
    with pytest.raises(StreamAdapterError) as caught:
        adapter.transform(Progress(1))
    assert caught.value.message == (
        "The stream event mapper for Progress must return StreamEvent or None."
    )


class Unsupported(StreamEvent):
    pass


def test_unsupported_portable_event_fails_loudly() -> None:
    with pytest.raises(StreamAdapterError) as caught:
        NativeAdapter().transform(Unsupported())
    assert caught.value.message == "NativeAdapter cannot encode stream event Unsupported."

    adapter = NativeAdapter()
    adapter.map_event(Progress, lambda p: Unsupported())
    with pytest.raises(StreamAdapterError, match="cannot encode stream event Unsupported"):
        adapter.transform(Progress(1))


TERMINALS: dict[str, Any] = {
    "end": lambda a: a.end(),
    "error": lambda a: a.error(RuntimeError("x")),
    "interrupt": lambda a: a.interrupt(ToolResultsRequest(1, (PendingCall("c", "t", {}),))),
}


@pytest.mark.parametrize("first", list(TERMINALS))
def test_nothing_is_emitted_after_a_terminal(first: str) -> None:
    adapter = NativeAdapter()
    TERMINALS[first](adapter)
    assert adapter.transform(TextChunk("m", "late")) == []
    assert adapter.transform(Custom("late")) == []
    assert adapter.transform(Unsupported()) == []
    assert adapter.start() == []
    for second in TERMINALS.values():
        assert second(adapter) == []


def test_chunk_subclass_keeps_its_base_event_type() -> None:
    from relayline.shared.chunks import TextChunk

    class LoudText(TextChunk):
        pass

    events = NativeAdapter().transform(LoudText("m1", "HI"))
    assert [e.type for e in events] == ["text"]


def test_the_terminal_carries_the_runs_usage_once_reported() -> None:
    from relayline.shared.events import RunUsage
    from relayline.shared.protocols.agui import AGUIAdapter
    from relayline.shared.protocols.vercel import VercelAIAdapter

    # the other protocols have no place for it: they drop it
    assert AGUIAdapter("t1").transform(RunUsage({"input": 1, "output": 1})) == []
    assert VercelAIAdapter().transform(RunUsage({"input": 1, "output": 1})) == []
    quiet = NativeAdapter()
    assert quiet.end() == []  # no usage reported: a completed segment emits nothing

    usage = {"input": 120, "output": 30}
    for terminal, expected in [
        ("end", [ProtocolEvent("finish", {"usage": usage})]),
        (
            "error",
            [
                ProtocolEvent(
                    "error", {"message": "The run failed.", "code": "internal", "usage": usage}
                )
            ],
        ),
    ]:
        adapter = NativeAdapter()
        assert adapter.transform(RunUsage({"input": 100, "output": 20})) == []
        assert adapter.transform(RunUsage(usage)) == []  # the newest total wins
        assert TERMINALS[terminal](adapter) == expected
    adapter = NativeAdapter()
    adapter.transform(RunUsage(usage))
    [interrupt] = TERMINALS["interrupt"](adapter)
    assert interrupt.type == "interrupt" and interrupt.data["usage"] == usage
    assert set(interrupt.data) == {"request", "usage"}


def bound(run_id: str = "run_1") -> NativeAdapter:
    adapter = NativeAdapter()
    adapter.bind_run(run_id)
    return adapter


def done(status: str, run_id: str = "run_1") -> ProtocolEvent:
    return ProtocolEvent("done", {"status": status, "runId": run_id})


def test_a_segment_of_a_run_ends_with_done_naming_how() -> None:
    assert bound().end() == [done("completed")]
    request = ToolResultsRequest(1, (PendingCall("c", "t", {}),))
    [interrupt, last] = bound().interrupt(request)
    assert interrupt.type == "interrupt" and last == done("interrupted")
    assert bound().stopped() == [ProtocolEvent("cancelled", {"reason": "user"}), done("cancelled")]
    assert bound("run_9").error(RuntimeError("x")) == [
        ProtocolEvent("error", {"message": "The run failed.", "code": "internal"}),
        done("failed", "run_9"),
    ]
    assert done("completed").to_json() == {"type": "done", "status": "completed", "runId": "run_1"}


def test_done_follows_the_usage_frame_and_nothing_follows_done() -> None:
    from relayline.shared.events import RunUsage

    adapter = bound()
    adapter.transform(RunUsage({"input": 3, "output": 4}))
    assert adapter.end() == [
        ProtocolEvent("finish", {"usage": {"input": 3, "output": 4}}),
        done("completed"),
    ]
    assert adapter.error(RuntimeError("late")) == [] and adapter.stopped() == []


def test_failure_frames_claim_done_only_for_a_run_they_end() -> None:
    from relayline.shared.errors import StreamLostError
    from relayline.shared.protocols import failure_frames

    lost = StreamLostError("The stream was interrupted; resume it.")
    frames = failure_frames("native", "t1", {}, lost, started=True)
    assert [f.type for f in frames] == ["error"]  # the run may go on: the client resumes
    refused = failure_frames("native", "t1", {}, RuntimeError("x"), started=False, ended_run="r")
    assert [f.type for f in refused] == ["error", "done"] and refused[-1] == done("failed", "r")
