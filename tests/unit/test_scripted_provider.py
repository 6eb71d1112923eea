"""ScriptedProvider: rules, steps, chunking, tool calls, templates, errors
(docs/DESIGN.md section 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.errors import ProviderError
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.providers import ScriptedProvider
from relayline.shared.providers.base import (
    ModelDelta,
    ModelRequest,
    Provider,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(system_prompt=None, messages=messages, tools=())


def user(text: str) -> Message:
    return Message.user(text)


def assistant(text: str = "", *calls: ToolCallPart) -> Message:
    return Message(id=f"a_{text}_{len(calls)}", role="assistant", text=text, tool_calls=calls)


def tool_message(*results: tuple[str, str]) -> Message:
    parts = tuple(ToolResultPart(call_id=cid, name="t", content=c) for cid, c in results)
    return Message(id="tool_1", role="tool", tool_results=parts)


def play(provider: ScriptedProvider, *messages: Message) -> list[ModelDelta]:
    return list(provider.stream(request(*messages)))


def text_of(deltas: list[ModelDelta], kind: type[TextDelta | ReasoningDelta] = TextDelta) -> str:
    return "".join(d.text for d in deltas if isinstance(d, kind))


def script(*rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"rules": list(rules), **extra}


def test_is_a_provider() -> None:
    assert isinstance(ScriptedProvider(script({"match": "", "steps": [{"text": "x"}]})), Provider)


def test_first_matching_rule_on_last_user_message_wins() -> None:
    provider = ScriptedProvider(
        script(
            {"match": "(?i)title", "steps": [{"text": "first"}]},
            {"match": "title", "steps": [{"text": "second"}]},
            {"match": "", "steps": [{"text": "fallback"}]},
        )
    )
    assert text_of(play(provider, user("The TITLE please"))) == "first"
    assert text_of(play(provider, user("hello"))) == "fallback"
    # Only the last user message matters, and the regex is searched, not anchored.
    assert text_of(play(provider, user("title"), assistant("first"), user("bye"))) == "fallback"


def test_step_index_counts_assistant_messages_since_last_user_message() -> None:
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "one"}, {"text": "two"}, {"text": "three"}]})
    )
    assert text_of(play(provider, user("hi"))) == "one"
    assert text_of(play(provider, user("hi"), assistant("one"))) == "two"
    history = (user("hi"), assistant("one"), tool_message(("c", "r")), assistant("two"))
    assert text_of(play(provider, *history)) == "three"
    # Assistant messages before the last user message are not counted.
    assert text_of(play(provider, *history, user("again"))) == "one"


def test_text_is_split_by_chunk_size() -> None:
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "Hello, world!"}]}, chunk_size=5)
    )
    deltas = play(provider, user("x"))
    assert deltas == [TextDelta("Hello"), TextDelta(", wor"), TextDelta("ld!")]


def test_default_chunk_size_is_four() -> None:
    provider = ScriptedProvider(script({"match": "", "steps": [{"text": "abcdefghij"}]}))
    assert [d.text for d in play(provider, user("x"))] == ["abcd", "efgh", "ij"]  # type: ignore[union-attr]


def test_reasoning_streams_before_text() -> None:
    provider = ScriptedProvider(
        script(
            {"match": "", "steps": [{"text": "Hello there", "reasoning": "Greeting."}]},
            chunk_size=3,
        )
    )
    deltas = play(provider, user("x"))
    kinds = [type(d) for d in deltas]
    first_text = kinds.index(TextDelta)
    assert set(kinds[:first_text]) == {ReasoningDelta}
    assert set(kinds[first_text:]) == {TextDelta}
    assert text_of(deltas, ReasoningDelta) == "Greeting."
    assert text_of(deltas) == "Hello there"
    assert all(len(d.text) <= 3 for d in deltas)  # type: ignore[union-attr]


def collect_calls(deltas: list[ModelDelta]) -> dict[int, dict[str, Any]]:
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            call = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = delta.id or call["id"]
            call["name"] = delta.name or call["name"]
            call["arguments"] += delta.arguments
    return calls


def test_tool_calls_with_and_without_id() -> None:
    arguments = {"path": "/tmp/report.pdf", "nested": {"n": [1, 2, 3]}, "é": True}
    provider = ScriptedProvider(
        script(
            {
                "match": "",
                "steps": [
                    {
                        "tool_calls": [
                            {"name": "delete_file", "id": "call_fixed", "arguments": arguments},
                            {"name": "read_title"},
                            {"name": "read_title", "arguments": {}},
                        ]
                    }
                ],
            },
            chunk_size=4,
        )
    )
    deltas = play(provider, user("x"))
    assert all(isinstance(d, ToolCallDelta) for d in deltas)
    calls = collect_calls(deltas)
    assert sorted(calls) == [0, 1, 2]
    assert calls[0]["id"] == "call_fixed"
    assert [c["name"] for c in calls.values()] == ["delete_file", "read_title", "read_title"]
    assert json.loads(calls[0]["arguments"]) == arguments
    assert json.loads(calls[1]["arguments"]) == {}
    assert json.loads(calls[2]["arguments"]) == {}
    # Arguments arrive in fragments of at most chunk_size characters.
    fragments = [d.arguments for d in deltas if isinstance(d, ToolCallDelta) and d.index == 0]
    assert len([f for f in fragments if f]) > 1
    assert all(len(f) <= 4 for f in fragments)

    generated = {calls[1]["id"], calls[2]["id"]}
    assert len(generated) == 2
    assert all(cid.startswith("call_") for cid in generated)
    # A second play mints new ids.
    again = collect_calls(play(provider, user("x")))
    assert again[0]["id"] == "call_fixed"
    assert {again[1]["id"], again[2]["id"]}.isdisjoint(generated)


def test_text_and_tool_calls_in_one_step() -> None:
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "Let me look.", "tool_calls": [{"name": "t"}]}]})
    )
    deltas = play(provider, user("x"))
    first_call = next(i for i, d in enumerate(deltas) if isinstance(d, ToolCallDelta))
    assert all(isinstance(d, TextDelta) for d in deltas[:first_call])
    assert text_of(deltas) == "Let me look."
    assert collect_calls(deltas)[0]["name"] == "t"


def test_templates() -> None:
    provider = ScriptedProvider(
        script(
            {
                "match": "",
                "steps": [
                    {"tool_calls": [{"name": "a", "id": "c1"}, {"name": "b", "id": "c2"}]},
                    {
                        "reasoning": "User said {{last_user_message}}.",
                        "text": "Last: {{last_tool_result}}; all: {{tool_results}}",
                    },
                ],
            },
            chunk_size=100,
        )
    )
    calls = (ToolCallPart("c1", "a", {}), ToolCallPart("c2", "b", {}))
    deltas = play(
        provider,
        user("Read the title"),
        assistant("", *calls),
        tool_message(("c1", "Report"), ("c2", "Q3 ünits")),
    )
    assert text_of(deltas, ReasoningDelta) == "User said Read the title."
    assert text_of(deltas) == 'Last: Q3 ünits; all: {"c1":"Report","c2":"Q3 ünits"}'


def test_templates_without_tool_results_render_empty() -> None:
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "[{{last_tool_result}}] {{tool_results}}"}]})
    )
    assert text_of(play(provider, user("x"))) == "[] {}"


def test_error_step_raises_after_streaming_text() -> None:
    provider = ScriptedProvider(
        script(
            {
                "match": "",
                "steps": [
                    {"text": "Partial", "error": "Model exploded", "tool_calls": [{"name": "t"}]}
                ],
            }
        )
    )
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError, match="Model exploded"):
        for delta in provider.stream(request(user("x"))):
            seen.append(delta)
    assert text_of(seen) == "Partial"
    assert not any(isinstance(d, ToolCallDelta) for d in seen)


def test_running_past_the_last_step_fails_clearly() -> None:
    provider = ScriptedProvider(script({"match": "(?i)hi", "steps": [{"text": "one"}]}))
    with pytest.raises(ProviderError) as caught:
        play(provider, user("hi"), assistant("one"))
    assert caught.value.message == (
        "The script rule '(?i)hi' has 1 step(s); the model was called for step 2."
    )


def test_no_matching_rule_fails_clearly() -> None:
    provider = ScriptedProvider(script({"match": "^title$", "steps": [{"text": "x"}]}))
    with pytest.raises(ProviderError) as caught:
        play(provider, user("hello"))
    assert caught.value.message == "No script rule matches the message 'hello'."


def test_no_user_message_fails_clearly() -> None:
    provider = ScriptedProvider(script({"match": "", "steps": [{"text": "x"}]}))
    with pytest.raises(ProviderError, match="needs a user message"):
        play(provider, assistant("only"))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([], "must be a JSON object"),
        ({}, "non-empty 'rules' list"),
        ({"rules": []}, "non-empty 'rules' list"),
        ({"rules": {"match": ""}}, "non-empty 'rules' list"),
        ({"rules": [{"steps": [{"text": "x"}]}]}, "rule 0 needs a string 'match' regex"),
        ({"rules": [{"match": 1, "steps": [{"text": "x"}]}]}, "needs a string 'match' regex"),
        ({"rules": [{"match": "(", "steps": [{"text": "x"}]}]}, "rule 0 has an invalid regex"),
        ({"rules": [{"match": ""}]}, "rule 0 needs a non-empty 'steps' list"),
        ({"rules": [{"match": "", "steps": []}]}, "needs a non-empty 'steps' list"),
        ({"rules": [{"match": "", "steps": [{"txt": "x"}]}]}, "rule 0 step 0 must be an object"),
        ({"rules": [{"match": "", "steps": ["text"]}]}, "rule 0 step 0 must be an object"),
        (
            {"rules": [{"match": "", "steps": [{"text": "a"}]}, {"match": "", "steps": [{}, 3]}]},
            "rule 1 step 1 must be an object",
        ),
        (
            {"rules": [{"match": "", "steps": [{"tool_calls": [{"arguments": {}}]}]}]},
            "a tool call needs a name",
        ),
        (
            {
                "rules": [
                    {"match": "", "steps": [{"tool_calls": [{"name": "t", "arguments": [1]}]}]}
                ]
            },
            "tool call arguments must be an object",
        ),
        (
            {
                "rules": [
                    {"match": "", "steps": [{"tool_calls": [{"name": "t", "arguments": "{}"}]}]}
                ]
            },
            "tool call arguments must be an object",
        ),
        ({"chunk_size": 0, "rules": [{"match": "", "steps": [{}]}]}, "'chunk_size' must be"),
        ({"chunk_size": True, "rules": [{"match": "", "steps": [{}]}]}, "'chunk_size' must be"),
        ({"chunk_size": "4", "rules": [{"match": "", "steps": [{}]}]}, "'chunk_size' must be"),
    ],
)
def test_script_validation(bad: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ScriptedProvider(bad)


def test_from_file(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "chunk_size": 2,
                "rules": [{"match": "", "steps": [{"text": "Hi {{last_user_message}}"}]}],
            }
        ),
        encoding="utf-8",
    )
    provider = ScriptedProvider.from_file(path)
    assert provider.chunk_size == 2
    assert text_of(play(provider, user("Zoë"))) == "Hi Zoë"
    assert text_of(play(ScriptedProvider.from_file(str(path)), user("A"))) == "Hi A"


def test_from_file_rejects_invalid_script(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"rules": []}', encoding="utf-8")
    with pytest.raises(ValueError, match="non-empty 'rules'"):
        ScriptedProvider.from_file(path)


def test_calls_counter_counts_every_model_call() -> None:
    provider = ScriptedProvider(script({"match": "^ok$", "steps": [{"text": "x"}]}))
    assert provider.calls == 0
    play(provider, user("ok"))
    play(provider, user("ok"))
    with pytest.raises(ProviderError):
        play(provider, user("no match"))
    assert provider.calls == 3


def test_delays_are_accepted() -> None:
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "abcdef", "delay_ms": 1, "chunk_delay_ms": 1}]})
    )
    assert text_of(play(provider, user("x"))) == "abcdef"


class _Clock:
    """A clock that moves only when the provider sleeps or the consumer works."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


def test_chunks_keep_their_schedule_when_the_consumer_falls_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 8 chunks, one per 10 ms; the consumer spends 35 ms on the second: the three
    # chunks due meanwhile come at once (as a socket buffer holds them), then the
    # pace resumes on the original schedule, and the answer ends when it would have.
    clock = _Clock()
    monkeypatch.setattr("relayline.shared.providers.scripted.time", clock)
    provider = ScriptedProvider(
        script({"match": "", "steps": [{"text": "abcdefgh", "chunk_delay_ms": 10}]}, chunk_size=1)
    )
    texts = []
    for delta in provider.stream(request(user("x"))):
        texts.append(delta.text)  # type: ignore[union-attr]
        if len(texts) == 2:
            clock.now += 0.035
    assert "".join(texts) == "abcdefgh"
    assert clock.sleeps == [0.01, 0.01, 0.005, 0.01, 0.01]
    assert clock.now == pytest.approx(100.08)


def test_templates_fill_in_one_pass_and_results_belong_to_this_turn() -> None:
    provider = ScriptedProvider(
        {
            "rules": [
                {"match": "", "steps": [{"text": "[{{last_user_message}}|{{last_tool_result}}]"}]}
            ]
        }
    )
    earlier = (
        user("first"),
        Message(id="a", role="assistant", tool_calls=(ToolCallPart("c1", "f", {}),)),
        Message(id="r", role="tool", tool_results=(ToolResultPart("c1", "f", "old result"),)),
        Message(id="a2", role="assistant", text="ok"),
    )
    deltas = list(provider.stream(request(*earlier, user("say {{tool_results}}"))))
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "[say {{tool_results}}|]"
