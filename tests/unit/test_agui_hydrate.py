"""AG-UI reload: AGUIAdapter.hydrate and agui_thread_payload (reference 7.3; G 98-104)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relayline.shared.agent import Agent, AgentSpec, FrontendTool, tool
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.agui.hydrate import hydrate
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.web.agui import agui_thread_payload
from tests.support.agents import build_spec
from tests.support.agui import (
    approval_spec,
    approve,
    as_client_holds,
    ask,
    attach,
    collect,
    fresh,
    only,
    reply,
    same_shape,
    scripted,
    stream_with,
    tool_reply,
)


def test_reload_during_approval_equals_the_live_snapshot(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("appr", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-0", [], "Hello", "u-0")
    wire, _ = ask(fresh(agent), "r-1", held, "Delete it", "u-1")
    (snapshot,) = only(wire, "MESSAGES_SNAPSHOT")
    live = {"messages": snapshot["messages"], "interrupts": wire[-1]["outcome"]["interrupts"]}
    assert AGUIAdapter.hydrate(agent.history(), agent.inspect()) == live
    payload = agui_thread_payload(sqlite_store, "appr")
    assert payload == {**live, "status": "suspended", "before": None, "stopped": []}
    # The reloaded confirmation ids resume the run in any process.
    ids = [i["id"] for i in payload["interrupts"]]
    assert ids == ["call_d"]
    state = fresh(agent).submit_inputs({"resume": approve(*ids)}, AGUIInputTranslator()).run()
    assert state.interrupt is not None and state.interrupt.kind == "tool_results"


def test_reload_keeps_reasoning_and_text_of_the_suspended_response(sqlite_store: Store) -> None:
    agent = Agent("appr2", approval_spec(), sqlite_store)
    wire, _ = ask(agent, "r-1", [], "Remove a.txt", "u-1")
    (snapshot,) = only(wire, "MESSAGES_SNAPSHOT")
    hydrated = hydrate(agent.history(), agent.inspect())
    assert hydrated["messages"] == snapshot["messages"]
    assert [m["role"] for m in hydrated["messages"]] == ["user", "reasoning", "assistant"]
    assert "toolCalls" not in hydrated["messages"][-1]  # still awaiting approval, as live
    assert hydrated["interrupts"] == wire[-1]["outcome"]["interrupts"]


def test_completed_turns_keep_the_live_ids(sqlite_store: Store, tmp_path: Path) -> None:
    agent = Agent("done", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-0", [], "Hello", "u-0")
    _, held = ask(fresh(agent), "r-1", held, "Weather?", "u-1")
    hydrated = hydrate(agent.history(), agent.inspect())
    assert hydrated["interrupts"] == []
    assert as_client_holds(hydrated["messages"]) == same_shape(held)
    roles = [m["role"] for m in hydrated["messages"]]
    assert roles == ["user", "reasoning", "assistant", "user", "assistant", "tool", "assistant"]


def test_frontend_wait_reloads_as_one_generic_interrupt_and_resumes(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("wait", build_spec(tmp_path), sqlite_store)
    _, held = ask(agent, "r-1", [], "batch", "u-1")
    _, held = reply(agent, "r-2", held, resume=approve("call_a", "call_b", "call_c"))
    reply(agent, "r-3", [*held, tool_reply("call_a", "Page A")])  # a partial result

    reloaded = agui_thread_payload(sqlite_store, "wait")
    assert reloaded["status"] == "suspended"
    messages = reloaded["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["content"] == "Working on it."
    assert [c["id"] for c in messages[1]["toolCalls"]] == ["call_a", "call_b", "call_c"]
    assert messages[2] == {
        "id": "result_call_a",
        "role": "tool",
        "toolCallId": "call_a",
        "content": "Page A",
    }
    (interrupt,) = reloaded["interrupts"]
    state = agent.state()
    assert state is not None and state.interrupt is not None
    assert interrupt == {
        "id": str(state.interrupt.interrupt_id),
        "reason": "tool_results",
        "message": "Waiting for external tool results",
        "metadata": state.interrupt.to_json(),
    }
    assert [c["callId"] for c in interrupt["metadata"]["toolCalls"]] == ["call_b", "call_c"]

    results = {"call_b": {"result": "Page B"}, "call_c": {"result": "Page C"}}
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": results}]
    final, held = reply(agent, "r-4", messages, resume=resume)
    assert not only(final, "TOOL_CALL_START")  # the reloaded client holds every call
    answered = [e["toolCallId"] for e in only(final, "TOOL_CALL_RESULT")]
    assert answered == ["call_b", "call_c"]  # answered by resume, so the client learns them
    again = agui_thread_payload(sqlite_store, "wait")
    assert again["interrupts"] == [] and again["status"] is None
    assert [m["id"] for m in again["messages"][:2]] == [m["id"] for m in messages[:2]]
    assert [m["id"] for m in again["messages"][2:5]] == [
        "result_call_a",
        "result_call_b",
        "result_call_c",
    ]
    answer = again["messages"][-1]["content"]
    assert answer is not None and answer.startswith("Results: ")
    assert as_client_holds(again["messages"]) == same_shape(held)


def test_a_wait_with_a_deadline_reloads_with_its_expiry(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("late", build_spec(tmp_path, frontend_wait_timeout=3600), sqlite_store)
    agent.run("Title?")
    state = agent.state()
    assert state is not None and state.interrupt is not None
    (interrupt,) = agui_thread_payload(sqlite_store, "late")["interrupts"]
    assert interrupt["expiresAt"] == state.interrupt.to_json()["expiresAt"]
    assert interrupt["expiresAt"].endswith("+00:00")  # ISO 8601, as clients parse it


def test_a_run_that_failed_mid_batch_hides_the_unsettled_calls(
    sqlite_store: Store, tmp_path: Path
) -> None:
    agent = Agent("cut", build_spec(tmp_path), sqlite_store)
    attach(agent, "r-1")
    frames = agent.stream(Message.user("Weather?", id="u-1"))
    for frame in frames:
        if frame.type == "TOOL_CALL_RESULT":
            break
    frames.close()  # the client went away after the tool ran
    run = agent.inspect()
    assert run is not None and run.status == "failed"
    latest = hydrate(agent.history(), run)
    assert dict(latest) == {
        "messages": [{"id": "u-1", "role": "user", "content": "Weather?"}],
        "interrupts": [],
    }
    older_view = hydrate(agent.history(), None)["messages"]
    assert [c["id"] for c in older_view[1]["toolCalls"]] == ["call_w"]
    assert agui_thread_payload(sqlite_store, "cut")["status"] == "failed"


def test_the_question_of_a_failed_first_inference_is_shown(sqlite_store: Store) -> None:
    agent = Agent("q", AgentSpec(provider=scripted({"error": "model down"})), sqlite_store)
    attach(agent, "r-1")
    _, failure = collect(agent.stream(Message.user("Anyone there?", id="u-1")))
    assert failure is not None
    assert dict(agui_thread_payload(sqlite_store, "q")) == {
        "messages": [{"id": "u-1", "role": "user", "content": "Anyone there?"}],
        "interrupts": [],
        "status": "failed",
        "before": None,
        "stopped": [],
    }


def test_the_latest_page_reaches_back_to_the_open_turn(sqlite_store: Store, tmp_path: Path) -> None:
    agent = Agent("page", build_spec(tmp_path), sqlite_store)
    agent.run(Message.user("Hello", id="u-0"))
    agent.run(Message.user("Delete it", id="u-1"))  # suspends: u-1 and the proposal are stored
    latest = agui_thread_payload(sqlite_store, "page", limit=1)
    assert [m["id"] for m in latest["messages"]] == ["u-1"]  # the proposal is held back
    assert latest["before"] == "u-1" and [i["id"] for i in latest["interrupts"]] == ["call_d"]
    older = agui_thread_payload(sqlite_store, "page", limit=50, before=latest["before"])
    assert [m["role"] for m in older["messages"]] == ["user", "reasoning", "assistant"]
    assert older["messages"][0]["id"] == "u-0"
    assert older["interrupts"] == [] and older["before"] is None


def test_older_pages_show_every_call_and_error_results(sqlite_store: Store, tmp_path: Path) -> None:
    agent = Agent("old", build_spec(tmp_path), sqlite_store)
    agent.run(Message.user("Title?", id="u-0"))
    agent.submit_tool_results({"call_t": {"error": "no page"}}).run()
    agent.run(Message.user("Delete it", id="u-1"))  # the open batch: call_d and call_t again
    latest = agui_thread_payload(sqlite_store, "old", limit=2)
    assert [m["id"] for m in latest["messages"]] == ["u-1"] and latest["before"] == "u-1"
    older = agui_thread_payload(sqlite_store, "old", limit=3, before="u-1")
    proposal, result, answer = older["messages"]
    assert [c["id"] for c in proposal["toolCalls"]] == ["call_t"]
    assert result == {
        "id": "result_call_t",
        "role": "tool",
        "toolCallId": "call_t",
        "content": "no page",
        "error": "no page",
    }
    assert answer["content"] == "The title is no page."
    # Paging walks back by stored ids and the pages join without gaps or repeats.
    assert older["before"] == proposal["id"]
    first = agui_thread_payload(sqlite_store, "old", limit=3, before=older["before"])
    assert [m["id"] for m in first["messages"]] == ["u-0"] and first["before"] is None
    # The scripted model reuses call_t: the earlier answer does not reveal the new call.
    whole = hydrate(agent.history(), agent.inspect())["messages"]
    assert whole[-1] == {"id": "u-1", "role": "user", "content": "Delete it"}
    assert [c["id"] for m in whole for c in m.get("toolCalls", [])] == ["call_t"]
    # Without the run (an older page), the open batch's calls are all shown.
    shown = hydrate(agent.history(limit=1), None)["messages"][0]
    assert [c["id"] for c in shown["toolCalls"]] == ["call_d", "call_t"]


def test_text_stays_a_string(sqlite_store: Store, tmp_path: Path) -> None:
    sqlite_store.create_thread("sys", "anonymous")
    sqlite_store.append_messages("sys", [Message(id="s-1", role="system", text="Be brief.")])
    Agent("sys", build_spec(tmp_path), sqlite_store).run(Message.user("Hi there", id="u-1"))
    messages = agui_thread_payload(sqlite_store, "sys")["messages"]
    assert messages[:2] == [
        {"id": "s-1", "role": "system", "content": "Be brief."},
        {"id": "u-1", "role": "user", "content": "Hi there"},
    ]


def test_status_is_null_without_a_run_or_after_completion(
    sqlite_store: Store, tmp_path: Path
) -> None:
    empty: dict[str, Any] = {
        "messages": [],
        "interrupts": [],
        "status": None,
        "before": None,
        "stopped": [],
    }
    assert agui_thread_payload(sqlite_store, "nobody") == empty
    Agent("fine", build_spec(tmp_path), sqlite_store).run("Hello")
    payload = agui_thread_payload(sqlite_store, "fine")
    assert payload["status"] is None and payload["interrupts"] == []


def test_redacted_arguments_stay_hidden_on_reload(sqlite_store: Store) -> None:
    @tool(redact=["password"])
    def login(user: str, password: str) -> str:
        """Log in."""
        return "ok"

    call = {"id": "c1", "name": "login", "arguments": {"user": "ann", "password": "s3cr3t"}}
    spec = AgentSpec(provider=scripted({"tool_calls": [call]}, {"text": "In."}), tools=[login])
    Agent("red", spec, sqlite_store).run("log in")
    history = Agent("red", spec, sqlite_store).history()
    masked = hydrate(history, None, redact={"login": ["password"]})["messages"][1]
    assert masked["toolCalls"][0]["function"]["arguments"] == '{"user":"ann","password":"***"}'

    # The open batch knows what its tools redact: no redact map is needed, as live.
    secret = {"id": "c2", "name": "paste", "arguments": {"token": "t0k3n"}}
    paste = FrontendTool("paste", "Paste a token", redact=("token",))
    spec = AgentSpec(provider=scripted({"tool_calls": [secret]}), frontend_tools=[paste])
    agent = Agent("red2", spec, sqlite_store)
    wire = stream_with(agent, "r-1", [], "paste it")
    live = "".join(e["delta"] for e in only(wire, "TOOL_CALL_ARGS"))
    reloaded = agui_thread_payload(sqlite_store, "red2")["messages"][1]["toolCalls"][0]
    assert live == reloaded["function"]["arguments"] == '{"token":"***"}'
