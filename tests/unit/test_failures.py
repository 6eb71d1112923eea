"""Why a run failed: each class of failure has its stable code and a message for the
thread's owner, on every protocol's error frame, in the run record and in RunState;
keys never appear; an unknown error says nothing of itself. The model preflight finds
what would fail every turn."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from relayline.shared.agent import Agent, AgentSpec, tool
from relayline.shared.chunks import ToolResultChunk
from relayline.shared.errors import (
    FAILURE_CODES,
    AgentUnavailableError,
    ProviderError,
    RunFailedError,
    StepLimitError,
    ToolFailedError,
)
from relayline.shared.events import ProtocolEvent
from relayline.shared.failures import failure_of, redact_keys, stored_failure
from relayline.shared.persistence import Store
from relayline.shared.preflight import CachedPreflight, check_agents, report
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.providers import ScriptedProvider
from relayline.shared.providers.base import ModelDelta, ModelRequest
from relayline.shared.providers.checks import ModelProblem
from relayline.shared.registry import AgentRegistry
from relayline.shared.texts import PROVIDER_FAILED, RUN_FAILED
from tests.support.failure_agents import CARD_ERROR

KEY = "sk-proj-0123456789abcdefghij"
AUTH = ProviderError(
    f"OpenAI-compatible provider answered HTTP 401 (check the API key): bad key {KEY}",
    reason="provider_auth",
    advice="The model provider at http://127.0.0.1:1/v1 refused the API key (HTTP 401): "
    "set OPENAI_API_KEY to a valid key.",
)


def scripted(*steps: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider({"rules": [{"match": "", "steps": list(steps)}]})


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (AUTH, "provider_auth", AUTH.advice),
        # a provider error without advice is neutral: its own text may name hosts
        (ProviderError("upstream 10.0.0.7 exploded"), "provider_error", PROVIDER_FAILED),
        (StepLimitError("The run reached its limit of 2 model calls."), "step_limit", None),
        (ToolFailedError("The tool 'pay' failed: RuntimeError: no", "pay"), "tool_failed", None),
        (AgentUnavailableError("The agent 'default' cannot be loaded."), "agent_unavailable", None),
        (
            SoftTimeLimitExceeded(),
            "timeout",
            "The run took longer than the worker's time limit and was stopped.",
        ),
        (RuntimeError("password=hunter2 in a traceback"), "internal", RUN_FAILED),
    ],
)
def test_each_failure_has_its_code_and_a_message_for_the_owner(
    error: BaseException, code: str, message: str | None
) -> None:
    failure = failure_of(error)
    assert failure.code == code and code in FAILURE_CODES
    expected = message if message is not None else getattr(error, "message", None)
    assert failure.message == expected
    # the operator's detail names the class and what happened, keys redacted
    assert failure.detail.startswith(type(error).__name__)
    assert KEY not in failure.detail and KEY not in failure.message


def test_an_unknown_error_keeps_its_text_for_the_operator_only() -> None:
    failure = failure_of(RuntimeError("password=hunter2"))
    assert failure.message == RUN_FAILED and "hunter2" not in failure.message
    assert failure.detail == "RuntimeError: password=hunter2"


def test_keys_and_bearer_tokens_are_redacted_wherever_they_come_from() -> None:
    text = f"key {KEY}, header Bearer abcdefghijklmnop, gsk_0123456789abcdefgh, {'mine'}"
    assert redact_keys(text, ("mine",)) == "key ***, header Bearer ***, ***, ***"
    tool = ToolFailedError(f"The tool 'pay' failed: RuntimeError: token {KEY}", "pay")
    assert KEY not in failure_of(tool).message


def test_every_protocol_frames_the_reason_and_its_code() -> None:
    advice = AUTH.advice
    agui = AGUIAdapter("t", "r")
    assert [e.to_json() for e in agui.start() + agui.error(AUTH)][-1] == {
        "type": "RUN_ERROR",
        "message": advice,
        "code": "provider_auth",
    }
    assert NativeAdapter().error(AUTH) == [
        ProtocolEvent("error", {"message": advice, "code": "provider_auth"})
    ]
    # the Vercel UI message stream's error part has room for the text only
    assert [e.to_json() for e in VercelAIAdapter().error(AUTH)] == [
        {"type": "error", "errorText": advice}
    ]


def test_a_stored_failure_is_read_back_and_an_old_run_without_a_code_is_internal() -> None:
    failure = failure_of(AUTH)
    assert stored_failure(failure.stored(), failure.message) == failure.to_json()
    assert stored_failure(None, "Something failed before codes.") == {
        "code": "internal",
        "message": "Something failed before codes.",
    }
    assert stored_failure(None, None) is None


def test_a_tool_declared_to_fail_the_run_fails_it_with_tool_failed(sqlite_store: Store) -> None:
    @tool(on_error="fail")
    def pay(amount: int) -> str:
        """Pay."""
        raise RuntimeError(CARD_ERROR)

    spec = AgentSpec(
        provider=scripted(
            {"tool_calls": [{"id": "c1", "name": "pay", "arguments": {"amount": 5}}]},
            {"text": "never reached"},
        ),
        tools=[pay],
    )
    agent = Agent("pay", spec, sqlite_store)
    agent.set_stream_adapter(NativeAdapter)
    frames: list[ProtocolEvent] = []
    with pytest.raises(RunFailedError):
        for frame in agent.stream("pay 5"):
            frames.append(frame)
    message = (
        "The tool 'pay' failed: RuntimeError: the payment service refused the charge (token ***)"
    )
    # the call's error result first, then the run's error, then done
    assert [f.type for f in frames[-3:]] == ["tool-result", "error", "done"]
    assert frames[-2].data == {"message": message, "code": "tool_failed"}
    state = agent.state()
    assert state is not None and state.status == "failed"
    assert (state.error, state.error_code) == (message, "tool_failed")
    record = agent.inspect()
    assert record is not None and record.checkpoint["failure"]["detail"].startswith(
        "ToolFailedError: The tool 'pay' failed"
    )
    assert "sk-live" not in str(record.checkpoint) and "sk-live" not in str(frames)


def test_a_tool_that_hands_its_error_to_the_model_is_the_default(sqlite_store: Store) -> None:
    @tool
    def pay(amount: int) -> str:
        """Pay."""
        raise RuntimeError("declined")

    spec = AgentSpec(
        provider=scripted(
            {"tool_calls": [{"id": "c1", "name": "pay", "arguments": {"amount": 5}}]},
            {"text": "Sorry: {{last_tool_result}}"},
        ),
        tools=[pay],
    )
    items = list(Agent("model", spec, sqlite_store).stream("pay 5"))
    assert [i.tool.is_error for i in items if isinstance(i, ToolResultChunk)] == [True]
    state = Agent("model", spec, sqlite_store).state()
    assert state is not None and state.status == "completed" and state.error_code is None

    def skip() -> None:
        """Skip."""

    with pytest.raises(ValueError, match="on_error must be one of model, fail"):
        tool(on_error="ignore")(skip)  # type: ignore[call-overload]


def test_the_step_limit_is_step_limit(sqlite_store: Store) -> None:
    @tool
    def again() -> str:
        """Again."""
        return "more"

    call = {"tool_calls": [{"name": "again", "arguments": {}}]}
    spec = AgentSpec(provider=scripted(call, call, call), tools=[again], max_steps=2)
    state = Agent("limit", spec, sqlite_store).run("go")
    assert (state.status, state.error_code) == ("failed", "step_limit")
    assert state.error == ("The run reached its limit of 2 model calls without finishing the turn.")


# the model preflight ------------------------------------------------------------------


class CountingChecks:
    """A provider whose preflight reports one problem and counts how often it is asked."""

    asked = 0

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        yield from ()

    def preflight(self) -> list[ModelProblem]:
        CountingChecks.asked += 1
        return [ModelProblem("provider_auth", f"set OPENAI_API_KEY (not {KEY})")]


def counting_agent() -> AgentSpec:
    return AgentSpec(provider=CountingChecks())


def scripted_agent() -> AgentSpec:
    return AgentSpec(provider=scripted({"text": "hi"}))


@pytest.fixture
def closed_url() -> Iterator[str]:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_the_preflight_reports_each_agent_that_would_fail_every_turn(
    closed_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAYLINE_MODEL", "llama3.1")  # the OpenAI-compatible provider
    monkeypatch.setenv("OPENAI_BASE_URL", closed_url)
    registry = AgentRegistry(
        {
            "default": "tests.support.failure_agents:configured",
            "broken": "tests.support.broken_agent:spec",
            "scripted": "tests.unit.test_failures:scripted_agent",
        }
    )
    problems = check_agents(registry)
    assert [(p.agent, p.code) for p in problems] == [
        ("default", "provider_unreachable"),
        ("broken", "agent_unavailable"),
    ]
    assert problems[0].line() == (
        f"relayline warning: agent 'default': The model provider at {closed_url} cannot be "
        f"reached (connection refused at {closed_url[7:-3]}): start it, or set "
        "OPENAI_BASE_URL to where it listens. [provider_unreachable]"
    )
    assert "No module named 'an_sdk_nobody_installed'" in problems[1].message
    assert report(problems)["status"] == "warning"
    assert (report([])["status"], report([])["problems"]) == ("ok", [])


def test_the_preflight_is_kept_for_its_ttl_and_its_messages_are_redacted() -> None:
    now = [0.0]
    checks = CachedPreflight(
        AgentRegistry({"default": "tests.unit.test_failures:counting_agent"}),
        ttl=60.0,
        clock=lambda: now[0],
    )
    before = CountingChecks.asked
    [problem] = checks.problems()
    assert problem.message == "set OPENAI_API_KEY (not ***)"
    now[0] = 59.0
    checks.problems()
    assert CountingChecks.asked == before + 1
    now[0] = 60.0
    checks.problems()
    assert CountingChecks.asked == before + 2
