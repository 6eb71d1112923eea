"""Whole turns through the real loop with PydanticAIProvider driving pydantic-ai's own
FunctionModel and TestModel: text, reasoning, a backend tool, a frontend tool and an
approval, streamed through the native adapter, and a provider error mid-stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel

from relayline.shared.agent import Agent, AgentSpec, FrontendTool, tool
from relayline.shared.chunks import ReasoningChunk, TextChunk, ToolArgumentChunk
from relayline.shared.errors import RunFailedError
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.providers import PydanticAIProvider
from relayline.shared.texts import PROVIDER_FAILED

SECRET = "sk-live-abcdefghijklmnop0123"


@tool
def get_weather(city: str) -> str:
    """Look up the weather.

    Args:
        city: City name.
    """
    return f"sunny in {city}"


DELETED: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    DELETED.append(path)
    return f"{path} deleted"


class Script:
    """A FunctionModel stream function: the first call reasons, talks and calls three
    tools (arguments over many deltas); the next call reads their results."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls: list[tuple[list[pai.ModelMessage], AgentInfo]] = []
        self.fail_on = fail_on

    async def __call__(
        self, messages: list[pai.ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, Any]]:
        self.calls.append((messages, info))
        if len(self.calls) == 1:
            yield {0: DeltaThinkingPart(content="The user wants ")}
            yield {0: DeltaThinkingPart(content="three things.", signature="sig-1")}
            yield "Checking "
            yield "now."
            yield {1: DeltaToolCall(name="get_weather", tool_call_id="call_w")}
            for piece in ('{"ci', 'ty": ', '"Par', 'is"}'):
                yield {1: DeltaToolCall(json_args=piece)}
            yield {2: DeltaToolCall("delete_file", '{"path": "a.txt"}', tool_call_id="call_d")}
            yield {3: DeltaToolCall("read_title", "{}", tool_call_id="call_t")}
            return
        if self.fail_on == len(self.calls):
            yield "Half an ans"
            raise RuntimeError(f"upstream reset (key {SECRET})")
        returns = {
            p.tool_call_id: p.model_response_str()
            for m in messages
            if isinstance(m, pai.ModelRequest)
            for p in m.parts
            if isinstance(p, pai.ToolReturnPart)
        }
        yield f"Weather: {returns['call_w']}; "
        yield f"title: {returns['call_t']}; file: {returns['call_d']}."


def spec_for(model: Any) -> AgentSpec:
    return AgentSpec(
        provider=PydanticAIProvider(model, secrets=[SECRET]),
        tools=[get_weather, delete_file],
        frontend_tools=[FrontendTool("read_title", "Read the page title")],
        system_prompt="You help.",
    )


def native(agent: Agent) -> Agent:
    agent.set_stream_adapter(NativeAdapter)
    return agent


def frames(segment: Any) -> list[ProtocolEvent]:
    return list(segment)


def test_a_full_turn_with_reasoning_tools_and_an_approval(sqlite_store: Store) -> None:
    DELETED.clear()
    script = Script()
    spec = spec_for(FunctionModel(stream_function=script))

    # 1. reasoning, text and three calls streamed; the approval suspends the batch
    first = Agent("pai-turn", spec, sqlite_store)
    items = list(first.stream("Weather, title, delete a.txt"))
    assert "".join(i.content for i in items if isinstance(i, ReasoningChunk)) == (
        "The user wants three things."
    )
    assert "".join(i.content for i in items if isinstance(i, TextChunk)) == "Checking now."
    arguments = [i for i in items if isinstance(i, ToolArgumentChunk)]
    assert [a.delta for a in arguments if a.tool_call_id == "call_w"] == [
        '{"ci',
        'ty": ',
        '"Par',
        'is"}',
    ]
    state = first.state()
    assert state is not None and state.interrupt is not None
    assert state.interrupt.kind == "approval"
    assert DELETED == []

    # what the model was sent: the system prompt, the user turn, every tool
    messages, info = script.calls[0]
    tools = {t.name: t for t in info.function_tools}
    assert sorted(tools) == ["delete_file", "get_weather", "read_title"]
    assert tools["get_weather"].parameters_json_schema["properties"] == {
        "city": {"type": "string", "description": "City name."}
    }
    [request] = messages
    assert isinstance(request, pai.ModelRequest)
    assert [type(p).__name__ for p in request.parts] == ["SystemPromptPart", "UserPromptPart"]

    # 2. approved: the backend tools run, the frontend tool waits for the browser
    state = (
        Agent("pai-turn", spec, sqlite_store).submit_approval_decisions({"call_d": "approve"}).run()
    )
    assert DELETED == ["a.txt"]
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"
    assert state.interrupt.pending_ids == ["call_t"]

    # 3. the browser answers; the second model call reads every result, natively streamed
    agent = native(Agent("pai-turn", spec, sqlite_store))
    events = frames(agent.submit_tool_results({"call_t": {"result": "Home"}}).events())
    text = "".join(e.data["content"] for e in events if e.type == "text")
    assert text == "Weather: sunny in Paris; title: Home; file: a.txt deleted."
    finish, done = events[-2:]
    assert finish.type == "finish" and done.data["status"] == "completed"
    record = agent.inspect()
    assert record is not None and record.status == "completed"
    usage = record.checkpoint["usage"]
    assert usage == finish.data["usage"]
    history = agent.history()
    per_call = [m.meta["usage"] for m in history if m.role == "assistant"]
    assert len(per_call) == 2
    assert usage == {
        "input": sum(u["input"] for u in per_call),
        "output": sum(u["output"] for u in per_call),
    }
    assert usage["input"] > 0 and usage["output"] > 0

    # the history went back as pydantic-ai messages: the signed thinking replayed, the
    # three calls with their ids and arguments, the three results in one request
    messages, _ = script.calls[1]
    assert [m.kind for m in messages] == ["request", "response", "request"]
    response = messages[1]
    assert isinstance(response, pai.ModelResponse)
    thinking, said, *calls = response.parts
    assert isinstance(thinking, pai.ThinkingPart)
    assert (thinking.content, thinking.signature, thinking.provider_name) == (
        "The user wants three things.",
        "sig-1",
        "function",
    )
    assert isinstance(said, pai.TextPart) and said.content == "Checking now."
    assert all(isinstance(c, pai.ToolCallPart) for c in calls)
    assert [(c.tool_name, c.tool_call_id, c.args_as_dict()) for c in calls] == [  # type: ignore[union-attr]
        ("get_weather", "call_w", {"city": "Paris"}),
        ("delete_file", "call_d", {"path": "a.txt"}),
        ("read_title", "call_t", {}),
    ]
    results = [p for p in messages[2].parts if isinstance(p, pai.ToolReturnPart)]
    assert [(p.tool_call_id, p.outcome) for p in results] == [
        ("call_w", "success"),
        ("call_d", "success"),
        ("call_t", "success"),
    ]


def test_a_rejected_call_and_a_tool_error_reach_the_model_as_such(sqlite_store: Store) -> None:
    script = Script()
    spec = spec_for(FunctionModel(stream_function=script))
    Agent("pai-reject", spec, sqlite_store).run("go")
    Agent("pai-reject", spec, sqlite_store).submit_approval_decisions(
        {"call_d": ["reject", "not that one"]}
    ).run()
    Agent("pai-reject", spec, sqlite_store).submit_tool_results(
        {"call_t": {"error": "no page open"}}
    ).run()
    outcomes = {
        p.tool_call_id: p.outcome
        for m in script.calls[1][0]
        if isinstance(m, pai.ModelRequest)
        for p in m.parts
        if isinstance(p, pai.ToolReturnPart)
    }
    assert outcomes == {"call_w": "success", "call_d": "denied", "call_t": "failed"}


def test_a_provider_error_mid_stream_fails_the_run_without_the_key(sqlite_store: Store) -> None:
    script = Script(fail_on=2)
    spec = spec_for(FunctionModel(stream_function=script))
    Agent("pai-fail", spec, sqlite_store).run("go")
    Agent("pai-fail", spec, sqlite_store).submit_approval_decisions({"call_d": "approve"}).run()
    agent = native(Agent("pai-fail", spec, sqlite_store))
    events: list[ProtocolEvent] = []
    with pytest.raises(RunFailedError):
        for event in agent.submit_tool_results({"call_t": {"result": "Home"}}).events():
            events.append(event)
    assert "".join(e.data["content"] for e in events if e.type == "text") == "Half an ans"
    error, done = events[-2:]
    assert error.type == "error" and error.data["code"] == "provider_error"
    assert error.data["message"] == PROVIDER_FAILED
    assert done.type == "done" and done.data["status"] == "failed"
    # the first call's usage is the run's so far, on the terminal and on the run
    record = agent.inspect()
    assert record is not None and record.status == "failed"
    assert error.data["usage"] == record.checkpoint["usage"]
    assert record.error == PROVIDER_FAILED
    detail = record.checkpoint["failure"]["detail"]  # what the operator reads
    assert "upstream reset" in detail and SECRET not in detail and "***" in detail


def test_test_model_drives_a_tool_call_and_an_answer(sqlite_store: Store) -> None:
    # TestModel calls every tool it is given once, then answers with their results
    model = TestModel(call_tools=["get_weather"])
    spec = AgentSpec(provider=PydanticAIProvider(model), tools=[get_weather])
    state = Agent("pai-test-model", spec, sqlite_store).run("weather?")
    assert state.status == "completed"
    history = Agent("pai-test-model", spec, sqlite_store).history()
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[1].tool_calls[0].name == "get_weather"
    assert history[2].tool_results[0].content.startswith("sunny in ")
    assert "get_weather" in history[3].text
