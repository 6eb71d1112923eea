"""The agent loop through the public API, on a SQLite file (no services)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec, FrontendTool, RunState, tool
from relayline.shared.chunks import InterruptEvent, TextChunk, ToolCallChunk, ToolResultChunk
from relayline.shared.errors import (
    ExpiredError,
    InputTranslationError,
    RunFailedError,
    RunInFlightError,
    RunNotWaitingError,
    WorkflowError,
)
from relayline.shared.events import Activity, ProtocolEvent
from relayline.shared.interrupts import TIMEOUT_ERROR
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.providers import ScriptedProvider
from relayline.shared.texts import PROVIDER_FAILED
from tests.support.agents import build_spec, count


def scripted(*steps: dict[str, Any], match: str = "") -> ScriptedProvider:
    return ScriptedProvider({"chunk_size": 3, "rules": [{"match": match, "steps": list(steps)}]})


class Recorder:
    """A channel that records what the agent pushes to it."""

    def __init__(self, fail_send: bool = False) -> None:
        self.events: list[ProtocolEvent] = []
        self.lifecycle: list[str] = []
        self.fail_send = fail_send

    def send(self, event: ProtocolEvent) -> None:
        if self.fail_send:
            raise ConnectionError("transport down")
        self.events.append(event)

    def completed(self, state: RunState, workflow_id: str) -> None:
        self.lifecycle.append(f"completed:{workflow_id}")

    def interrupted(self, state: RunState, workflow_id: str) -> None:
        kind = state.interrupt.kind if state.interrupt else None
        self.lifecycle.append(f"interrupted:{workflow_id}:{kind}")

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self.lifecycle.append(f"failed:{workflow_id}")


def test_plain_turn_stores_user_and_assistant_with_stable_ids(sqlite_store: Store) -> None:
    spec = AgentSpec(provider=scripted({"reasoning": "Think.", "text": "Hi {{last_user_message}}"}))
    agent = Agent("plain", spec, sqlite_store)
    items = list(agent.stream("there"))
    texts = [i for i in items if isinstance(i, TextChunk)]
    assert "".join(t.content for t in texts) == "Hi there"
    stored = agent.history()
    assert [m.role for m in stored] == ["user", "assistant"]
    assert {t.message_id for t in texts} == {stored[1].id}
    assert stored[1].reasoning == "Think."
    state = agent.state()
    assert state is not None and state.status == "completed"


def test_two_calls_of_the_same_tool_stay_distinct(sqlite_store: Store, tmp_path: Path) -> None:
    spec = AgentSpec(
        provider=scripted(
            {
                "tool_calls": [
                    {"name": "read_title", "arguments": {"tab": 1}},
                    {"name": "read_title", "arguments": {"tab": 2}},
                ]
            },
            {"text": "{{tool_results}}"},
        ),
        frontend_tools=[FrontendTool("read_title", "Read a title")],
    )
    state = Agent("same", spec, sqlite_store).run("titles")
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"
    first, second = state.interrupt.pending_ids
    assert first != second
    state = (
        Agent("same", spec, sqlite_store)
        .submit_tool_results({second: {"result": "Two"}, first: {"result": "One"}})
        .run()
    )
    assert state.message == f'{{"{first}":"One","{second}":"Two"}}'


def test_backend_tool_error_reaches_the_model_and_activity_is_reported(
    sqlite_store: Store,
) -> None:
    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    spec = AgentSpec(
        provider=scripted(
            {"tool_calls": [{"id": "c1", "name": "explode", "arguments": {"reason": "boom"}}]},
            {"text": "Saw: {{last_tool_result}}"},
        ),
        tools=[explode],
    )
    items = list(Agent("err", spec, sqlite_store).stream("go"))
    activities = [i for i in items if isinstance(i, Activity)]
    assert [a.data["status"] for a in activities] == ["running", "error"]
    assert activities[1].data["callId"] == "c1" and activities[1].data["toolName"] == "explode"
    assert isinstance(activities[1].data["durationMs"], int)
    results = [i for i in items if isinstance(i, ToolResultChunk)]
    assert results[0].tool.is_error and results[0].tool.to_json()["result"] == {
        "error": "RuntimeError: boom"
    }
    state = Agent("err", spec, sqlite_store).state()
    assert state is not None and state.status == "completed"
    assert Agent("err", spec, sqlite_store).history()[-1].text == "Saw: RuntimeError: boom"


def test_redacted_arguments_are_never_published(sqlite_store: Store) -> None:
    @tool(redact=["password"])
    def login(user: str, password: str) -> str:
        """Log in."""
        return "ok"

    spec = AgentSpec(
        provider=scripted(
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "login",
                        "arguments": {"user": "ann", "password": "s3cr3t"},
                    }
                ]
            },
            {"text": "done"},
        ),
        tools=[login],
    )
    agent = Agent("redact", spec, sqlite_store)
    agent.set_stream_adapter(NativeAdapter)
    frames = list(agent.stream("log in"))
    published = "".join(str(f.to_json()) for f in frames)
    assert "s3cr3t" not in published
    assert "ann" in published
    # The model itself still saw the real arguments.
    assert agent.history()[1].tool_calls[0].inputs["password"] == "s3cr3t"


def test_step_limit_fails_the_run_cleanly(sqlite_store: Store) -> None:
    @tool
    def again() -> str:
        """Loop."""
        return "more"

    loop_step = {"tool_calls": [{"name": "again", "arguments": {}}]}
    spec = AgentSpec(provider=scripted(*([loop_step] * 5)), tools=[again], max_steps=3)
    state = Agent("limit", spec, sqlite_store).run("loop")
    assert state.status == "failed"
    assert state.error == ("The run reached its limit of 3 model calls without finishing the turn.")
    assert (
        sum(1 for m in Agent("limit", spec, sqlite_store).history() if m.role == "assistant") == 3
    )


def test_unknown_tool_and_provider_error_fail_the_run(sqlite_store: Store) -> None:
    spec = AgentSpec(provider=scripted({"tool_calls": [{"name": "nope", "arguments": {}}]}))
    state = Agent("unknown", spec, sqlite_store).run("x")
    assert state.status == "failed" and state.error == "The model called the unknown tool 'nope'."
    spec = AgentSpec(provider=scripted({"text": "partial", "error": "model down"}))
    agent = Agent("down", spec, sqlite_store)
    agent.set_stream_adapter(NativeAdapter)
    frames: list[ProtocolEvent] = []
    with pytest.raises(RunFailedError):
        for frame in agent.stream("x"):
            frames.append(frame)
    run_id = frames[-1].data["runId"]
    assert frames[-2:] == [
        ProtocolEvent("error", {"message": PROVIDER_FAILED, "code": "provider_error"}),
        ProtocolEvent("done", {"status": "failed", "runId": run_id}),
    ]
    assert run_id == agent.inspect().run_id  # type: ignore[union-attr]
    assert "model down" not in str([f.to_json() for f in frames])  # the provider's own text
    # A failed run does not hold the thread: the next turn runs.
    spec_ok = AgentSpec(provider=scripted({"text": "fine"}))
    assert Agent("down", spec_ok, sqlite_store).run("again").status == "completed"


def test_new_turn_while_suspended_is_refused(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    Agent("busy", spec, sqlite_store).run("What is the title?")
    with pytest.raises(RunInFlightError, match="is suspended, waiting on #1 tool_results"):
        Agent("busy", spec, sqlite_store).run("hello")
    assert [m.role for m in Agent("busy", spec, sqlite_store).history()] == ["user", "assistant"]


def test_admission_is_lazy_and_refusals_happen_before_output(
    sqlite_store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    events = Agent("lazy", spec, sqlite_store).stream("hello")
    assert Agent("lazy", spec, sqlite_store).inspect() is None
    list(events)
    assert count(tmp_path, "model") == 1


def test_submission_errors(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    agent = Agent("errors", spec, sqlite_store)
    with pytest.raises(InputTranslationError, match=r"^There is no persisted run to continue\.$"):
        agent.submit_tool_results({"call_t": {"result": "x"}})
    agent.run("Delete it")  # suspends on approval of call_d
    with pytest.raises(WorkflowError, match="'call_d' is awaiting approval, not execution"):
        agent.submit_tool_results({"call_d": {"result": "x"}})
    with pytest.raises(InputTranslationError, match="no matching continuation input"):
        agent.submit_approval_decisions({})
    with pytest.raises(WorkflowError, match="'call_x' does not belong"):
        agent.submit_approval_decisions({"call_x": "approve"})
    with pytest.raises(InputTranslationError, match='must be "approve", "reject"'):
        agent.submit_approval_decisions({"call_d": "maybe"})
    with pytest.raises(InputTranslationError, match="map of call id"):
        agent.submit_approval_decisions(["call_d"])  # type: ignore[arg-type]
    agent.submit_approval_decisions({"call_d": ["reject", "keep it"]}).run()
    with pytest.raises(WorkflowError, match="not approval decisions"):
        agent.submit_approval_decisions({"call_d": "approve"})
    assert count(tmp_path, "tool.delete_file") == 0
    agent.submit_tool_results({"call_t": {"error": "no page"}}).run()
    # A late answer: the run exists and ended, a conflict that says how it stands.
    with pytest.raises(RunNotWaitingError, match="is completed: there is no current") as late:
        agent.submit_tool_results({"call_t": {"result": "late"}})
    assert (late.value.code, late.value.status) == ("RUN_NOT_WAITING", "completed")
    results = agent.history()[-2].tool_results
    assert "TOOL NOT EXECUTED" in results[0].content and "keep it" in results[0].content
    assert results[1].is_error and results[1].content == "no page"


def test_staging_is_read_only(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    agent = Agent("ro", spec, sqlite_store)
    agent.run("What is the title?")
    before = agent.inspect()
    staged = agent.submit_tool_results({"call_t": {"result": "T"}})
    agent.submit_inputs(
        {"messages": [{"id": "m1", "role": "tool", "toolCallId": "call_t", "content": "T"}]},
        AGUIInputTranslator(),
    )
    assert agent.inspect() == before
    assert staged.run().status == "completed"


def test_agui_payload_continues_the_run(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    agent = Agent("agui", spec, sqlite_store)
    agent.run("Delete it")
    resume = {
        "resume": [{"interruptId": "call_d", "status": "resolved", "payload": {"approved": True}}]
    }
    state = agent.submit_inputs(resume, AGUIInputTranslator()).run()
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"
    tool_msg = {"id": "m2", "role": "tool", "toolCallId": "call_t", "content": '{"a":1}'}
    state = agent.submit_inputs({"messages": [tool_msg]}, AGUIInputTranslator()).run()
    assert state.status == "completed"
    assert state.message == 'Finished: {"call_d":"r.pdf deleted","call_t":"{\\"a\\":1}"}'


def test_frontend_wait_deadline_settles_as_timeout(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path, frontend_wait_timeout=0.001)
    agent = Agent("late", spec, sqlite_store)
    state = agent.run("What is the title?")
    assert state.interrupt is not None and state.interrupt.expires_at is not None
    # The deadline is 1 ms after the suspension; a fast machine can answer before it.
    # Waiting for the clock itself to pass it is what the test is about.
    deadline = state.interrupt.expires_at
    while (left := (deadline - datetime.now(UTC)).total_seconds()) >= 0:
        threading.Event().wait(left + 0.001)
    with pytest.raises(ExpiredError, match=r"Interrupt '1' has expired\."):
        agent.submit_tool_results({"call_t": {"result": "late"}})
    state = agent.expire_wait().run()
    assert state.status == "completed"
    assert state.message == f"The title is {TIMEOUT_ERROR}."


def test_expire_wait_refuses_a_live_wait(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path, frontend_wait_timeout=3600)
    agent = Agent("live", spec, sqlite_store)
    agent.run("What is the title?")
    with pytest.raises(WorkflowError, match="not waiting on an expired frontend wait"):
        agent.expire_wait()


def test_channel_gets_events_and_lifecycle_and_its_errors_never_fail_the_run(
    sqlite_store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    recorder = Recorder()
    agent = Agent("chan", spec, sqlite_store)
    agent.set_stream_adapter(NativeAdapter)
    agent.set_channel(lambda: recorder)
    pulled = list(agent.stream("What is the title?"))
    assert recorder.events == pulled
    assert [e.type for e in pulled[-2:]] == ["interrupt", "done"]
    assert pulled[-1].data["status"] == "interrupted"
    assert recorder.lifecycle == ["interrupted:chan:tool_results"]
    resumed = list(agent.submit_tool_results({"call_t": {"result": "T"}}).events())
    assert recorder.lifecycle[-1] == "completed:chan"
    # Only post-resume output on the second segment: no repeat of the first tool call.
    assert not any(e.type == "tool-call" for e in resumed)

    broken = Recorder(fail_send=True)
    errors: list[BaseException] = []
    agent.set_channel(lambda: broken)
    agent.on_channel_error = errors.append
    assert agent.run("hello").status == "completed"
    assert broken.lifecycle == ["completed:chan"]
    assert errors and isinstance(errors[0], ConnectionError)


def test_without_adapter_pull_gets_chunks_and_interrupt_event(
    sqlite_store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    recorder = Recorder()
    agent = Agent("pull", spec, sqlite_store)
    agent.set_channel(lambda: recorder)
    items = list(agent.stream("What is the title?"))
    assert isinstance(items[-1], InterruptEvent)
    assert any(isinstance(i, ToolCallChunk) for i in items)
    assert recorder.events == []  # no adapter: the channel gets only the lifecycle
    assert recorder.lifecycle == ["interrupted:pull:tool_results"]


def test_bad_input_is_refused(sqlite_store: Store, tmp_path: Path) -> None:
    spec = build_spec(tmp_path)
    with pytest.raises(InputTranslationError, match="Invalid thread id"):
        Agent("bad id!", spec, sqlite_store)
    with pytest.raises(InputTranslationError, match="non-empty user message"):
        Agent("t", spec, sqlite_store).run("   ")
    with pytest.raises(InputTranslationError, match="collides with a backend tool"):
        Agent("t", spec, sqlite_store).run("x", frontend_tools=[FrontendTool("weather")])
    with pytest.raises(ValueError, match="more than once"):
        AgentSpec(
            provider=spec.provider, tools=spec.tools, frontend_tools=[FrontendTool("weather")]
        )
    assert sqlite_store.thread("t") is None


def test_client_declared_frontend_tools_survive_into_a_fresh_agent(sqlite_store: Store) -> None:
    spec = AgentSpec(
        provider=scripted(
            {"tool_calls": [{"id": "c1", "name": "pick_color", "arguments": {"hint": "warm"}}]},
            {"text": "Picked {{last_tool_result}}"},
        )
    )
    catalog = [FrontendTool("pick_color", "Pick a color", {"type": "object", "properties": {}})]
    state = Agent("dyn", spec, sqlite_store).run("color", frontend_tools=catalog)
    assert state.interrupt is not None and state.interrupt.pending_ids == ["c1"]
    # The continuation's agent knows nothing of the catalog: the run remembers it.
    state = Agent("dyn", spec, sqlite_store).submit_tool_results({"c1": {"result": "red"}}).run()
    assert state.message == "Picked red"


def test_stop_after_tool_call_records_results_without_another_model_call(
    sqlite_store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    agent = Agent("stop", spec, sqlite_store)
    agent.run("What is the title?")
    state = agent.submit_tool_results({"call_t": {"result": "T"}}).stop_after_tool_call().run()
    assert state.status == "completed"
    assert count(tmp_path, "model") == 1
    assert [m.role for m in agent.history()] == ["user", "assistant", "tool"]
    assert agent.history()[-1].tool_results[0].content == "T"
    # The next turn runs normally.
    assert agent.run("hello").status == "completed"
    assert count(tmp_path, "model") == 2


def test_recover_needs_an_expired_lease_unless_the_same_executor_retries(
    sqlite_store: Store, tmp_path: Path
) -> None:
    spec = build_spec(tmp_path)
    lost = Agent("lost", spec, sqlite_store, executor="task-1")
    events = lost.stream("Weather please")
    for item in events:  # run until the backend tool's result is checkpointed
        if isinstance(item, ToolResultChunk):
            break
    record = lost.inspect()
    assert record is not None and record.status == "running"
    assert record.checkpoint["executor"] == "task-1"
    with pytest.raises(WorkflowError, match="holds a live lease"):
        Agent("lost", spec, sqlite_store, executor="task-2").recover()
    state = Agent("lost", spec, sqlite_store, executor="task-1").recover().run()
    assert state.status == "completed" and state.attempt == 2
    assert count(tmp_path, "tool.weather") == 1
    events.close()  # the abandoned generator is fenced out: it writes nothing
    final = Agent("lost", spec, sqlite_store).inspect()
    assert final is not None and final.status == "completed"


def test_a_client_catalog_never_lifts_the_approval_gate_of_a_declared_frontend_tool(
    sqlite_store: Store,
) -> None:
    # A page that registers a handler for the tool declares it again in its catalog
    # (CopilotKit's useFrontendTool does); the server's declaration must still decide.
    gated = FrontendTool("open_page", "Open a page", requires_approval=True)
    spec = AgentSpec(
        provider=scripted(
            {"tool_calls": [{"id": "c1", "name": "open_page", "arguments": {"page": "docs"}}]},
            {"text": "Opened {{last_tool_result}}"},
        ),
        frontend_tools=[gated],
    )
    redeclared = FrontendTool("open_page", "Open a page", requires_approval=False)
    state = Agent("gate", spec, sqlite_store).run("open", frontend_tools=[redeclared])
    assert state.status == "suspended"
    assert state.interrupt is not None and state.interrupt.kind == "approval"
