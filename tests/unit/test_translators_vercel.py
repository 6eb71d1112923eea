"""Vercel AI SDK input translation (reference 6.3, 6.4, 6.6, catalogue H).

Unit level on purpose: the translator is a pure function of (payload, interrupt), and
these cases pin the exact 400/409 texts the HTTP layer forwards to clients.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any

import pytest

from relayline.shared.errors import InputTranslationError, WorkflowError
from relayline.shared.interrupts import ApprovalRequest, PendingCall, ToolResultsRequest
from relayline.shared.protocols.translator import InputTranslator
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator

NO_MATCH = "The payload contains no matching continuation input."
SHAPE = "Vercel input must end with a user message or an assistant message carrying tool parts."


@dataclasses.dataclass(frozen=True)
class GenericWait:
    interrupt_id: int
    expires_at: datetime | None = None


def results(*ids: str, accepted: dict[str, Any] | None = None) -> ToolResultsRequest:
    calls = tuple(PendingCall(i, "read_title", {}) for i in ids)
    return ToolResultsRequest(4, calls, accepted or {})


def approval(*ids: str) -> ApprovalRequest:
    return ApprovalRequest(2, tuple(PendingCall(i, "delete_file", {}) for i in ids))


def part(call_id: Any, state: str, kind: str = "tool-read_title", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "toolCallId": call_id, "state": state, "input": {}, **extra}


def output(call_id: Any, value: Any, kind: str = "tool-read_title") -> dict[str, Any]:
    return part(call_id, "output-available", kind, output=value)


def responded(call_id: str, approved: Any = True, **extra: Any) -> dict[str, Any]:
    return part(
        call_id, "approval-responded", approval={"id": call_id, "approved": approved, **extra}
    )


def assistant(*parts: Any) -> dict[str, Any]:
    return {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, *parts]}


def body(*messages: Any) -> dict[str, Any]:
    return {"id": "thread-1", "trigger": "submit-message", "messages": list(messages)}


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


translate = VercelAIInputTranslator().translate


def test_is_an_input_translator() -> None:
    assert isinstance(VercelAIInputTranslator(), InputTranslator)


@pytest.mark.parametrize("value", [False, 0, "", [], None, {"a": [1, 2]}, "text"])
def test_outputs_keep_their_json_type(value: Any) -> None:
    assert translate(body(assistant(output("c1", value))), results("c1")) == {
        "c1": {"result": value}
    }


def test_dynamic_tool_parts_and_error_parts() -> None:
    payload = body(
        assistant(
            output("c1", {"title": "Page"}, kind="dynamic-tool"),
            part("c2", "output-error", errorText="Tab closed"),
        )
    )
    assert translate(payload, results("c1", "c2")) == {
        "c1": {"result": {"title": "Page"}},
        "c2": {"error": "Tab closed"},
    }


def test_prior_approval_parts_and_earlier_cycles_are_ignored_for_results() -> None:
    payload = body(
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
        assistant(output("old", "earlier cycle"), responded("c1")),
        assistant(output("c1", "Page title"), {"type": "text", "text": "done"}),
    )
    assert translate(payload, results("c1")) == {"c1": {"result": "Page title"}}


def test_non_tool_parts_and_user_messages_are_not_answers() -> None:
    payload = body(
        {"role": "user", "parts": [output("c1", "from a user message")]},
        assistant({"type": "reasoning", "toolCallId": "c1", "state": "output-available"}),
    )
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate(payload, results("c1"))


def test_identical_repeats_are_accepted_once() -> None:
    payload = body(assistant(output("c1", 0)), assistant(output("c1", 0)))
    assert translate(payload, results("c1")) == {"c1": {"result": 0}}


def test_conflicting_duplicates_are_rejected_even_when_equal_in_python() -> None:
    # 0 and false are different JSON values though 0 == False in Python.
    payload = body(assistant(output("c1", 0), output("c1", False)))
    with pytest.raises(
        InputTranslationError, match=exactly("Conflicting responses for tool call 'c1'.")
    ):
        translate(payload, results("c1"))


def test_restated_accepted_results_are_returned_and_changed_ones_refused() -> None:
    request = results("c2", accepted={"c1": {"result": "a"}})
    payload = body(assistant(output("c1", "a"), output("c2", "b")))
    assert translate(payload, request) == {"c1": {"result": "a"}, "c2": {"result": "b"}}
    with pytest.raises(WorkflowError, match="already been settled with a different outcome"):
        translate(body(assistant(output("c1", "changed"))), request)


def test_partial_approval_translates_only_submitted_decisions() -> None:
    payload = body(
        assistant(
            responded("a"),
            responded("b", False, reason="not now"),
            part("c", "approval-requested", approval={"id": "c"}),
        )
    )
    assert translate(payload, approval("a", "b", "c")) == {
        "a": "approve",
        "b": ["reject", "not now"],
    }


def test_forged_approvals_are_ignored_and_requested_only_is_no_match() -> None:
    payload = body(assistant(responded("forged"), part("a", "approval-requested")))
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate(payload, approval("a"))


def test_explicit_approval_update_is_passed_on() -> None:
    request = dataclasses.replace(approval("a"), decided={"a": "approve"})
    payload = body(assistant(responded("a", False)))
    assert translate(payload, request) == {"a": "reject"}


@pytest.mark.parametrize("state", ["output-available", "output-error"])
def test_output_cannot_bypass_approval(state: str) -> None:
    payload = body(assistant(part("a", state, output="x", errorText="x")))
    message = "Tool call 'a' is awaiting approval, not execution results."
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate(payload, approval("a"))


@pytest.mark.parametrize(
    "approval_field",
    [{"id": "other", "approved": True}, {"approved": True}, None, "a"],
    ids=["other id", "no id", "null", "string"],
)
def test_mismatched_approval_id_is_rejected(approval_field: Any) -> None:
    payload = body(assistant(part("a", "approval-responded", approval=approval_field)))
    with pytest.raises(
        InputTranslationError, match=exactly("Approval ID does not match tool call 'a'.")
    ):
        translate(payload, approval("a"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"approved": "yes"}, "An approval response requires a boolean approved field."),
        (
            {"approved": True, "editedArgs": {"path": "x"}},
            "Approval with edited arguments is not supported.",
        ),
        ({"approved": False, "reason": 3}, "An approval reason must be a string."),
    ],
)
def test_invalid_approval_payloads(extra: dict[str, Any], message: str) -> None:
    payload = body(assistant(part("a", "approval-responded", approval={"id": "a", **extra})))
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate(payload, approval("a"))


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([assistant(part("c1", "output-available"))], "Tool call 'c1' has no output."),
        ([assistant(part("c1", "output-error"))], "Tool call 'c1' requires errorText."),
        (
            [assistant(part("c1", "output-error", errorText={"m": 1}))],
            "Tool call 'c1' requires errorText.",
        ),
        ([{"role": "assistant", "parts": None}], "'parts' must be a list."),
        ([{"role": "assistant", "parts": ["text"]}], "Every 'parts' entry must be an object."),
        (["hello"], "Every 'messages' entry must be an object."),
    ],
)
def test_malformed_parts(messages: list[Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        translate(body(*messages), results("c1"))


@pytest.mark.parametrize("state", ["input-streaming", "input-available", "output-denied"])
def test_presentation_states_are_ignored(state: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate(body(assistant(part("c1", state, output="x"))), results("c1"))


def test_tool_parts_cannot_answer_a_generic_wait() -> None:
    payload = body(assistant(output("3", {"ok": True})))
    with pytest.raises(InputTranslationError, match=exactly(NO_MATCH)):
        translate(payload, GenericWait(3))


def test_null_call_id_in_the_request_is_refused() -> None:
    request = results("c1", None)  # type: ignore[arg-type]
    with pytest.raises(
        InputTranslationError, match=exactly("A tool call requires a non-empty call ID.")
    ):
        translate(body(assistant(output("c1", 1))), request)


def test_null_message_list_is_rejected() -> None:
    with pytest.raises(InputTranslationError, match=exactly("'messages' must be a list.")):
        translate({"messages": None}, results("c1"))


# -- shape: new turn or continuation (6.3) --------------------------------------------


def test_trailing_assistant_message_is_a_continuation() -> None:
    assert VercelAIInputTranslator.is_continuation(body(assistant(output("c1", 1))))
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    assert not VercelAIInputTranslator.is_continuation(body(assistant(), user))


def test_new_turn_concatenates_text_parts() -> None:
    user = {
        "id": "u9",
        "role": "user",
        "parts": [
            {"type": "text", "text": "Read "},
            {"type": "file", "mediaType": "image/png", "url": "data:,"},
            {"type": "text", "text": "the title"},
        ],
    }
    assert VercelAIInputTranslator.new_turn_text(body(user)) == ("u9", "Read the title")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (body(), SHAPE),
        ({}, SHAPE),
        (body(assistant(output("c1", 1))), SHAPE),
        (body({"role": "system", "parts": []}), SHAPE),
        ({"messages": None}, "'messages' must be a list."),
        (body({"role": "user", "parts": "hi"}), "'parts' must be a list."),
    ],
)
def test_new_turn_shape_errors(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(InputTranslationError, match=exactly(message)):
        VercelAIInputTranslator.new_turn_text(payload)
