"""AG-UI input translation (reference 6.3-6.5, catalogue H).

Unit level on purpose: the translator is a pure function of (payload, interrupt), and
these cases pin the exact 400/409 texts the HTTP layer forwards to clients.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from relayline.shared.errors import InputTranslationError, WorkflowError
from relayline.shared.interrupts import ApprovalRequest, PendingCall, ToolResultsRequest
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.protocols.translator import InputTranslator

NO_MATCH = "The payload contains no matching continuation input."
CANCELLED = {"error": "Frontend tool execution cancelled."}
UNKNOWN = "The resume entry does not identify an active interrupt."
OBJECT_PAYLOAD = "Interrupt '4' requires an object payload."
DEADLINE = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@dataclasses.dataclass(frozen=True)
class GenericWait:
    """A plain event wait: neither tool results nor approval."""

    interrupt_id: int
    expires_at: datetime | None = None


def results(
    *ids: str,
    accepted: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
) -> ToolResultsRequest:
    calls = tuple(PendingCall(i, "read_title", {}) for i in ids)
    return ToolResultsRequest(4, calls, accepted or {}, expires_at)


def approval(*ids: str, decided: dict[str, Any] | None = None) -> ApprovalRequest:
    actions = tuple(PendingCall(i, "delete_file", {"path": f"{i}.pdf"}) for i in ids)
    return ApprovalRequest(2, actions, decided or {})


def tool_msg(call_id: Any, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"m-{call_id}",
        "role": "tool",
        "toolCallId": call_id,
        "content": content,
        **extra,
    }


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


translate = AGUIInputTranslator().translate


def test_is_an_input_translator() -> None:
    assert isinstance(AGUIInputTranslator(), InputTranslator)


# -- tool-message path (105, 113, 116, 117, 124, 125) ------------------------------


def test_tool_messages_keep_text_correlate_by_id_and_ignore_old_ids() -> None:
    payload = {
        "messages": [
            {"id": "u1", "role": "user", "content": "title?"},
            tool_msg("old", "earlier cycle"),
            tool_msg("c1", '{"a": 1}'),
            tool_msg("c2", "second call of the same tool"),
        ]
    }
    assert translate(payload, results("c1", "c2")) == {
        "c1": {"result": '{"a": 1}'},
        "c2": {"result": "second call of the same tool"},
    }


def test_tool_message_error_becomes_error_result_and_null_error_falls_back() -> None:
    payload = {"messages": [tool_msg("c1", "", error="boom"), tool_msg("c2", "fine", error=None)]}
    assert translate(payload, results("c1", "c2")) == {
        "c1": {"error": "boom"},
        "c2": {"result": "fine"},
    }


def test_forged_id_beside_real_one_is_ignored_and_multibyte_kept() -> None:
    payload = {"messages": [tool_msg("forged", "x"), tool_msg("c1", "Überschrift — 標題 🚀")]}
    assert translate(payload, results("c1")) == {"c1": {"result": "Überschrift — 標題 🚀"}}


def test_empty_resume_falls_back_to_messages() -> None:
    payload = {"resume": [], "messages": [tool_msg("c1", "t")]}
    assert translate(payload, results("c1")) == {"c1": {"result": "t"}}


@pytest.mark.parametrize(
    "messages",
    [
        [tool_msg("forged")],
        [tool_msg(7)],
        [{"role": "user", "toolCallId": "c1", "content": "x"}],
        [{"role": "assistant", "toolCallId": "c1", "content": "x"}],
        [],
    ],
    ids=["forged id", "numeric id", "user role", "assistant role", "no messages"],
)
def test_nothing_matching_is_no_continuation_input(messages: list[Any]) -> None:
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate({"messages": messages}, results("c1"))


def test_missing_messages_is_no_continuation_input() -> None:
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate({}, results("c1"))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"messages": None}, "'messages' must be a list."),
        ({"messages": {"0": tool_msg("c1")}}, "'messages' must be a list."),
        ({"messages": ["text"]}, "Every 'messages' entry must be an object."),
        ({"messages": [tool_msg("c1", None)]}, "Tool call 'c1' requires string content."),
        ({"messages": [tool_msg("c1", {"a": 1})]}, "Tool call 'c1' requires string content."),
        ({"messages": [tool_msg("c1", "x", error=5)]}, "Tool call 'c1' requires a string error."),
    ],
)
def test_malformed_tool_messages(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate(payload, results("c1"))


def test_conflicting_duplicates_within_one_payload_are_rejected() -> None:
    payload = {"messages": [tool_msg("c1", "a"), tool_msg("c1", "b")]}
    with pytest.raises(
        InputTranslationError, match=exactly("Conflicting responses for tool call 'c1'.")
    ):
        translate(payload, results("c1"))


def test_identical_duplicates_and_restated_accepted_results_are_accepted() -> None:
    request = results("c2", accepted={"c1": {"result": "a"}})
    payload = {"messages": [tool_msg("c1", "a"), tool_msg("c2", "b"), tool_msg("c2", "b")]}
    # The full map comes back; the agent decides that only c2 is new.
    assert translate(payload, request) == {"c1": {"result": "a"}, "c2": {"result": "b"}}


def test_conflicting_repeat_of_an_accepted_result_is_a_workflow_error() -> None:
    request = results("c2", accepted={"c1": {"result": "a"}})
    with pytest.raises(WorkflowError, match="has already been settled with a different outcome"):
        translate({"messages": [tool_msg("c1", "changed")]}, request)


def test_tool_messages_cannot_answer_an_approval_or_generic_wait() -> None:
    message = "Pending AG-UI interrupts require an explicit resume array."
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate({"messages": [tool_msg("a")]}, approval("a"))
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate({"messages": [tool_msg("a")]}, GenericWait(3))


def test_empty_request_call_id_is_refused() -> None:
    with pytest.raises(
        InputTranslationError, match=exactly("A tool call requires a non-empty call ID.")
    ):
        translate({"messages": [tool_msg("c1")]}, results("c1", ""))


# -- resume path (108, 110, 111, 114, 118, 119, 123, 126, 127) ------------------------


def resolved(target: str, payload: Any = None) -> dict[str, Any]:
    return {"interruptId": target, "status": "resolved", "payload": payload}


def cancelled(target: str) -> dict[str, Any]:
    return {"interruptId": target, "status": "cancelled"}


def test_resume_folds_approve_and_cancel_and_wins_over_tool_messages() -> None:
    payload = {
        "resume": [resolved("a", {"approved": True}), cancelled("b")],
        "messages": [tool_msg("a", "ignored")],
    }
    assert translate(payload, approval("a", "b")) == {"a": "approve", "b": "reject"}


def test_resume_wins_over_tool_messages_for_a_deferred_batch() -> None:
    payload = {"resume": [cancelled("4")], "messages": [tool_msg("c1", "from history")]}
    assert translate(payload, results("c1")) == {"c1": CANCELLED}


def test_cancelling_a_deferred_batch_settles_every_pending_call() -> None:
    assert translate({"resume": [cancelled("4")]}, results("c1", "c2")) == {
        "c1": CANCELLED,
        "c2": CANCELLED,
    }


def test_cancel_skips_calls_that_are_already_settled() -> None:
    # Defensive: even if a settled call were still listed, its result must not be replaced.
    request = ToolResultsRequest(
        4,
        (PendingCall("c1", "t", {}), PendingCall("c2", "t", {})),
        {"c1": {"result": "kept"}},
    )
    assert translate({"resume": [cancelled("4")]}, request) == {"c2": CANCELLED}


def test_resolved_deferred_batch_takes_a_result_map_including_false() -> None:
    result_map = {"c1": {"result": False}, "c2": {"error": "denied"}}
    assert translate({"resume": [resolved("4", result_map)]}, results("c1", "c2")) == result_map


def test_generic_wait_resolves_to_its_payload() -> None:
    payload = {"resume": [resolved("3", {"approved_by": "ops", "n": 0})]}
    wait = GenericWait(3)
    assert translate(payload, wait) == {"approved_by": "ops", "n": 0}


def test_generic_wait_cannot_be_cancelled() -> None:
    message = "Interrupt '3' does not support this resume operation."
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate({"resume": [cancelled("3")]}, GenericWait(3))


@pytest.mark.parametrize(
    ("result_map", "message", "refused"),
    [
        (
            {"c1": {"result": 1}, "forged": {"result": 2}},
            "does not belong to this deferred batch",
            WorkflowError,
        ),
        (
            {"c1": {"result": 1, "error": "x"}},
            "must contain either 'result' or a string 'error'",
            InputTranslationError,  # a malformed answer is bad input (400), no conflict
        ),
        (
            {"c1": {"result": 1}, "c2": {"error": 5}},
            "must contain either 'result'",
            InputTranslationError,
        ),
    ],
    ids=["forged id", "ambiguous entry", "valid entry does not excuse invalid one"],
)
def test_resolved_batch_is_validated_by_the_request(
    result_map: dict[str, Any], message: str, refused: type[Exception]
) -> None:
    with pytest.raises(refused, match=re.escape(message)):
        translate({"resume": [resolved("4", result_map)]}, results("c1", "c2"))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"resume": None}, "'resume' must be a list."),
        ({"resume": {"interruptId": "4"}}, "'resume' must be a list."),
        ({"resume": "4"}, "'resume' must be a list."),
        ({"resume": ["4"]}, "Every 'resume' entry must be an object."),
        ({"resume": [{"interruptId": 4, "status": "cancelled"}]}, UNKNOWN),
        ({"resume": [cancelled("c1")]}, UNKNOWN),
        ({"resume": [{"status": "cancelled"}]}, UNKNOWN),
        (
            {"resume": [{"interruptId": "4"}]},
            "Interrupt '4' requires resolved or cancelled status.",
        ),
        (
            {"resume": [{"interruptId": "4", "status": "done"}]},
            "Interrupt '4' requires resolved or cancelled status.",
        ),
        ({"resume": [{"interruptId": "4", "status": "resolved"}]}, OBJECT_PAYLOAD),
        ({"resume": [resolved("4", ["c1"])]}, OBJECT_PAYLOAD),
        ({"resume": [resolved("4", {})]}, NO_MATCH),
        (
            {"resume": [{**cancelled("4"), "payload": None}]},
            "A cancelled resume must omit payload.",
        ),
        ({"resume": [cancelled("4"), cancelled("4")]}, "Duplicate resume entry '4'."),
    ],
)
def test_malformed_resumes(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate(payload, results("c1"))


@pytest.mark.parametrize(
    ("payload", "decision"),
    [
        ({"approved": True}, "approve"),
        ({"approved": True, "reason": "ignored"}, "approve"),
        ({"approved": False}, "reject"),
        ({"approved": False, "reason": None}, "reject"),
        ({"approved": False, "reason": "too risky"}, ["reject", "too risky"]),
    ],
)
def test_approval_payload_mapping(payload: dict[str, Any], decision: Any) -> None:
    assert translate({"resume": [resolved("a", payload)]}, approval("a")) == {"a": decision}


@pytest.mark.parametrize(
    ("resume", "message"),
    [
        (
            [resolved("a", {"approved": True})],
            "AG-UI resume must address every published interrupt.",
        ),
        (
            [resolved("a", {"approved": True}), cancelled("other")],
            UNKNOWN,
        ),
        (
            [resolved("a", {"approved": True}), cancelled("2")],
            UNKNOWN,
        ),
        (
            [resolved("a", {"approved": "yes"}), cancelled("b")],
            "An approval response requires a boolean approved field.",
        ),
        (
            [resolved("a"), cancelled("b")],
            "An approval response requires a boolean approved field.",
        ),
        (
            [resolved("a", {"reason": "no"}), cancelled("b")],
            "An approval response requires a boolean approved field.",
        ),
        (
            [{**cancelled("a"), "payload": {"approved": False}}, cancelled("b")],
            "A cancelled resume must omit payload.",
        ),
        (
            [resolved("a", {"approved": True, "editedArgs": {"path": "x"}}), cancelled("b")],
            "Approval with edited arguments is not supported.",
        ),
        (
            [resolved("a", {"approved": False, "reason": 5}), cancelled("b")],
            "An approval reason must be a string.",
        ),
        ([cancelled("a"), cancelled("a")], "Duplicate resume entry 'a'."),
    ],
    ids=[
        "missing coverage",
        "unknown id",
        "request id instead of action id",
        "non-boolean",
        "missing payload",
        "missing approved",
        "cancelled with payload",
        "edited args",
        "non-string reason",
        "duplicate",
    ],
)
def test_invalid_approvals(resume: list[Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate({"resume": resume}, approval("a", "b"))


def test_explicit_approval_update_is_passed_on_latest_delivery_wins() -> None:
    # The translator reports the explicit decision; the tool node applies the latest one.
    request = approval("a", "b", decided={"a": "approve"})
    payload = {"resume": [resolved("a", {"approved": False, "reason": "changed"}), cancelled("b")]}
    assert translate(payload, request) == {"a": ["reject", "changed"], "b": "reject"}


def test_expiry_at_the_exact_deadline_is_rejected_and_before_is_accepted() -> None:
    request = results("c1", expires_at=DEADLINE)
    payload = {"resume": [cancelled("4")]}
    at_deadline = AGUIInputTranslator(now=lambda: DEADLINE)
    with pytest.raises(InputTranslationError, match=exactly("Interrupt '4' has expired.")):
        at_deadline.translate(payload, request)
    before = AGUIInputTranslator(now=lambda: DEADLINE - timedelta(seconds=1))
    assert before.translate(payload, request) == {"c1": CANCELLED}


def test_expired_approval_resume_is_rejected() -> None:
    request = dataclasses.replace(approval("a"), expires_at=datetime.now(UTC) - timedelta(hours=1))
    with pytest.raises(InputTranslationError, match=exactly("Interrupt 'a' has expired.")):
        translate({"resume": [resolved("a", {"approved": True})]}, request)


# -- shape: new turn or continuation (6.3, 121) ---------------------------------------


def test_shape_rule_decides_new_turn_or_continuation() -> None:
    user = {"id": "u1", "role": "user", "content": "hi"}
    assert AGUIInputTranslator.is_continuation({"resume": [cancelled("4")], "messages": [user]})
    assert AGUIInputTranslator.is_continuation({"messages": [user, tool_msg("c1")]})
    assert not AGUIInputTranslator.is_continuation({"resume": [], "messages": [user]})
    assert AGUIInputTranslator.new_turn_message({"messages": [user]}) == {
        "id": "u1",
        "role": "user",
        "content": "hi",
    }


def test_new_turn_message_joins_text_parts() -> None:
    content = [
        {"type": "text", "text": "Read "},
        {"type": "binary", "mimeType": "image/png", "data": "AAAA"},
        {"type": "text", "text": "the title"},
    ]
    message = {"id": "u2", "role": "user", "content": content}
    turn = AGUIInputTranslator.new_turn_message({"messages": [message]})
    assert turn["content"] == "Read the title"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"messages": None}, "'messages' must be a list."),
        ({"messages": "hi"}, "'messages' must be a list."),
        ({"messages": []}, "AG-UI input must end with a user message or carry a continuation."),
        ({}, "AG-UI input must end with a user message or carry a continuation."),
        (
            {"messages": [{"role": "assistant", "content": "x"}]},
            "AG-UI input must end with a user message or carry a continuation.",
        ),
        ({"resume": None}, "'resume' must be a list."),
    ],
)
def test_shape_errors(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        AGUIInputTranslator.new_turn_message(payload)


def test_continuation_is_not_a_new_turn() -> None:
    with pytest.raises(InputTranslationError):
        AGUIInputTranslator.new_turn_message({"messages": [tool_msg("c1")]})
