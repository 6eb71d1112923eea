"""PydanticAIProvider with pydantic-ai's real OpenAI and Anthropic models against a local
server replaying each provider's documented streaming wire format (no network, no key):
mapping both ways, a tool call over many deltas, streams cut short, HTTP errors without
the key, and a stop from another thread closing the call.

The model names are the tests' own (``gpt-relayline-test``, ``claude-relayline-test``):
a real one starts failing the day its provider retires it, since pydantic-ai then warns on
every request and the suite turns warnings into errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider as PydanticOpenAIProvider

from relayline.shared.errors import ProviderError
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.providers import (
    MetaDelta,
    ModelDelta,
    ModelRequest,
    OpenAIProvider,
    PydanticAIProvider,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
    configured_provider,
)
from relayline.shared.providers.pydantic_ai import REPLAY_KEY
from relayline.shared.settings import Settings
from relayline.shared.stop_signal import StopSignal
from tests.support.model_wire import (
    API_KEY,
    ModelWire,
    Reply,
    anthropic_stream,
    openai_stream,
    split,
)

WEATHER = ToolSchema(
    "get_weather",
    "Look up the weather.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
ARGUMENTS = '{"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}'


@pytest.fixture
def wire() -> Iterator[ModelWire]:
    server = ModelWire().start()
    yield server
    server.stop()


def openai_model(wire: ModelWire) -> PydanticAIProvider:
    provider = PydanticOpenAIProvider(base_url=f"{wire.url}/v1", api_key=API_KEY)
    return PydanticAIProvider(OpenAIChatModel("gpt-relayline-test", provider=provider))


def anthropic_model(wire: ModelWire) -> PydanticAIProvider:
    provider = AnthropicProvider(base_url=wire.url, api_key=API_KEY)
    return PydanticAIProvider(AnthropicModel("claude-relayline-test", provider=provider))


MODELS: dict[str, Callable[[ModelWire], PydanticAIProvider]] = {
    "openai": openai_model,
    "anthropic": anthropic_model,
}


def answer(kind: str, text: list[str], **options: Any) -> list[str]:
    return openai_stream(text, **options) if kind == "openai" else anthropic_stream(text, **options)


def request(*messages: Message, stop_signal: StopSignal | None = None) -> ModelRequest:
    history = messages or (Message.user("Hi", id="m1"),)
    return ModelRequest("Be brief.", tuple(history), (WEATHER,), stop_signal=stop_signal)


def collect(provider: PydanticAIProvider, req: ModelRequest | None = None) -> list[ModelDelta]:
    return list(provider.stream(req or request()))


def arguments_of(deltas: list[ModelDelta]) -> dict[int, str]:
    joined: dict[int, str] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            joined[delta.index] = joined.get(delta.index, "") + delta.arguments
    return joined


# the OpenAI chat completions wire ---------------------------------------------------------


def test_openai_text_reasoning_and_a_tool_call_over_many_deltas(wire: ModelWire) -> None:
    wire.queue(
        Reply(
            openai_stream(
                ["Let me ", "check."],
                reasoning=["Paris ", "weather."],
                tool_calls=[("call_1", "get_weather", split(ARGUMENTS, 3))],
                usage=(31, 12),
            )
        )
    )
    deltas = collect(openai_model(wire))
    assert [d.text for d in deltas if isinstance(d, ReasoningDelta)] == ["Paris ", "weather."]
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["Let me ", "check."]
    calls = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert len(calls) == 1 + len(split(ARGUMENTS, 3))
    assert (calls[0].id, calls[0].name) == ("call_1", "get_weather")
    assert list(arguments_of(deltas).values()) == [ARGUMENTS]
    assert deltas[-1] == Usage(input_tokens=31, output_tokens=12)
    body = wire.received[0].body
    assert body["stream"] is True and body["model"] == "gpt-relayline-test"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    assert wire.received[0].headers["authorization"] == f"Bearer {API_KEY}"


def test_openai_history_with_calls_and_results_goes_out_in_its_shape(wire: ModelWire) -> None:
    wire.queue(Reply(openai_stream(["Done."])))
    history = (
        Message.user("Weather in Paris?", id="m1"),
        Message(
            id="m2",
            role="assistant",
            text="Checking.",
            reasoning="never sent back without provider state",
            tool_calls=(ToolCallPart("call_1", "get_weather", {"city": "Paris"}),),
        ),
        Message(
            id="m3",
            role="tool",
            tool_results=(ToolResultPart("call_1", "get_weather", "sunny"),),
        ),
    )
    collect(openai_model(wire), request(*history))
    messages = wire.received[0].body["messages"]
    assert messages[1:] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


# the Anthropic messages wire --------------------------------------------------------------


def test_anthropic_thinking_is_kept_signed_and_replayed(wire: ModelWire) -> None:
    wire.queue(
        Reply(
            anthropic_stream(
                ["It is ", "sunny."],
                thinking=["Look ", "it up."],
                signature="sig-abc",
                tool_uses=[("toolu_1", "get_weather", split(ARGUMENTS, 4))],
                usage=(40, 18),
            )
        ),
        Reply(anthropic_stream(["Bye."])),
    )
    provider = anthropic_model(wire)
    deltas = collect(provider)
    assert [d.text for d in deltas if isinstance(d, ReasoningDelta)] == ["Look ", "it up."]
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "It is sunny."
    assert list(arguments_of(deltas).values()) == [ARGUMENTS]
    assert Usage(input_tokens=40, output_tokens=18) in deltas
    [replay] = [d for d in deltas if isinstance(d, MetaDelta)]
    assert replay.key == REPLAY_KEY
    assert replay.value["thinking"] == [
        {"content": "Look it up.", "signature": "sig-abc", "provider": "anthropic"}
    ]
    first = wire.received[0].body
    assert first["system"] == "Be brief." and first["stream"] is True
    assert first["tools"][0]["name"] == "get_weather"

    # the next call sends the signed thinking block back before the tool use
    assistant = Message(
        id="m2",
        role="assistant",
        text="It is sunny.",
        reasoning="Look it up.",
        tool_calls=(ToolCallPart("toolu_1", "get_weather", {"city": "Paris"}),),
        meta={REPLAY_KEY: replay.value},
    )
    results = Message(
        id="m3",
        role="tool",
        tool_results=(ToolResultPart("toolu_1", "get_weather", "boom", is_error=True),),
    )
    collect(provider, request(Message.user("Hi", id="m1"), assistant, results))
    sent = wire.received[1].body["messages"]
    assert sent[1]["role"] == "assistant"
    assert sent[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Look it up.",
        "signature": "sig-abc",
    }
    assert sent[1]["content"][-1]["type"] == "tool_use"
    tool_result = sent[2]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True


# failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_stream_cut_short_is_a_provider_error(wire: ModelWire, kind: str) -> None:
    events = answer(kind, ["Hel", "lo", " there"])
    wire.queue(Reply(events[:3], cut=True))
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError) as caught:
        for delta in MODELS[kind](wire).stream(request()):
            seen.append(delta)
    assert caught.value.message.startswith(f"pydantic-ai provider ({kind}:")
    assert not any(isinstance(d, Usage) for d in seen)


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_stream_closed_cleanly_before_its_end_is_a_provider_error(
    wire: ModelWire, kind: str
) -> None:
    # the HTTP body ends properly, but before the finish reason ([DONE], message_delta)
    wire.queue(Reply(answer(kind, ["Hel", "lo", " there"])[:3]))
    with pytest.raises(ProviderError, match="ended before the response was complete"):
        collect(MODELS[kind](wire))


@pytest.mark.parametrize("kind", list(MODELS))
def test_an_http_error_names_the_status_and_never_the_key(wire: ModelWire, kind: str) -> None:
    body = f'{{"error": {{"message": "Incorrect API key provided: {API_KEY}", "type": "x"}}}}'
    wire.queue(Reply([], status=401, body=body))
    with pytest.raises(ProviderError) as caught:
        collect(MODELS[kind](wire))
    message = caught.value.message
    assert "HTTP 401" in message and "check the API key" in message
    assert API_KEY not in message and "***" in message


def test_an_error_raised_by_the_model_mid_stream_is_a_provider_error() -> None:
    async def broken(messages: list[Any], info: AgentInfo) -> Any:
        yield "partial "
        raise ConnectionResetError("reset by peer, Bearer abcdefghijklmnopqrstu")

    provider = PydanticAIProvider(FunctionModel(stream_function=broken))
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError) as caught:
        for delta in provider.stream(request()):
            seen.append(delta)
    assert seen == [TextDelta("partial ")]
    assert "ConnectionResetError: reset by peer" in caught.value.message
    assert "abcdefghijklmnopqrstu" not in caught.value.message


def test_an_unknown_model_name_fails_the_call_not_the_import() -> None:
    provider = PydanticAIProvider("nosuchprovider:model-x")
    with pytest.raises(ProviderError, match="cannot use model 'nosuchprovider:model-x'"):
        collect(provider)
    with pytest.raises(ValueError, match="needs a model"):
        PydanticAIProvider(" ")


def test_a_missing_key_is_said_without_any_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        collect(PydanticAIProvider("anthropic:claude-relayline-test"))


# stop -----------------------------------------------------------------------------------


def stop_later(wire: ModelWire, token: StopSignal, stopped: list[float]) -> threading.Thread:
    def stop() -> None:
        assert wire.stalling.wait(10)
        time.sleep(0.1)
        stopped.append(time.monotonic())
        token.set()

    thread = threading.Thread(target=stop)
    thread.start()
    return thread


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("where", ["mid-stream", "before the headers"])
def test_a_stop_from_another_thread_closes_the_call(wire: ModelWire, kind: str, where: str) -> None:
    if where == "mid-stream":
        wire.queue(Reply(answer(kind, ["Hel", "lo", " there"]), stall_after=3))
    else:
        wire.queue(Reply([], stall_before_headers=True))
    token = StopSignal()
    stopped: list[float] = []
    thread = stop_later(wire, token, stopped)
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError, match="cancelled"):
        for delta in MODELS[kind](wire).stream(request(stop_signal=token)):
            seen.append(delta)
    ended = time.monotonic()
    thread.join()
    assert ended - stopped[0] < 1.0
    assert wire.client_closed.wait(1.0), "the server never saw the connection close"
    if where == "mid-stream":
        assert any(isinstance(d, TextDelta) for d in seen)
    assert token._callbacks == {}  # the provider unregistered its hook


def test_openai_provider_closes_its_response_on_a_stop(wire: ModelWire) -> None:
    wire.queue(Reply(openai_stream(["Hel", "lo", " there"]), stall_after=3))
    token = StopSignal()
    stopped: list[float] = []
    thread = stop_later(wire, token, stopped)
    provider = OpenAIProvider("gpt-relayline-test", api_key=API_KEY, base_url=f"{wire.url}/v1")
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError, match="cancelled"):
        for delta in provider.stream(request(stop_signal=token)):
            seen.append(delta)
    ended = time.monotonic()
    thread.join()
    provider.close()
    assert ended - stopped[0] < 1.0
    assert wire.client_closed.wait(1.0), "the server never saw the connection close"
    assert any(isinstance(d, TextDelta) for d in seen)
    assert token._callbacks == {}


def test_a_call_on_a_stopped_token_never_starts(wire: ModelWire) -> None:
    token = StopSignal()
    token.set()
    wire.queue(Reply(openai_stream(["x"])))
    for provider in (
        openai_model(wire),
        OpenAIProvider("gpt-relayline-test", api_key=API_KEY, base_url=f"{wire.url}/v1"),
    ):
        with pytest.raises(ProviderError, match="cancelled"):
            collect(provider, request(stop_signal=token))  # type: ignore[arg-type]
    assert wire.received == []


# configuration ----------------------------------------------------------------------------


def test_relayline_model_selects_the_provider() -> None:
    assert configured_provider(Settings()) is None
    chosen = configured_provider(Settings(model="anthropic:claude-relayline-test"))
    assert (
        isinstance(chosen, PydanticAIProvider) and chosen.name == "anthropic:claude-relayline-test"
    )
    bare = configured_provider(Settings(model="llama3.1", openai_base_url="http://127.0.0.1:1/v1"))
    assert isinstance(bare, OpenAIProvider) and bare.base_url == "http://127.0.0.1:1/v1"


def test_the_keys_in_the_environment_are_never_in_an_error() -> None:
    secret = "sk-ant-secret-0123456789"
    settings = Settings.from_env({"RELAYLINE_MODEL": "nosuch:x", "ANTHROPIC_API_KEY": secret})
    assert settings.model_api_keys == (secret,)
    assert secret not in repr(settings)
    provider = PydanticAIProvider.from_settings(settings)
    assert provider._redact(f"echo {secret} back") == "echo *** back"


# failure reasons and the preflight -----------------------------------------------------------


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_refused_key_is_provider_auth_naming_the_providers_variable(
    wire: ModelWire, kind: str
) -> None:
    body = f'{{"error": {{"message": "Incorrect API key provided: {API_KEY}", "type": "x"}}}}'
    wire.queue(Reply([], status=401, body=body))
    with pytest.raises(ProviderError) as caught:
        collect(MODELS[kind](wire))
    variable = "OPENAI_API_KEY" if kind == "openai" else "ANTHROPIC_API_KEY"
    assert caught.value.reason == "provider_auth"
    assert caught.value.advice is not None
    assert caught.value.advice.endswith(f"(HTTP 401): set {variable} to a valid key.")
    assert API_KEY not in caught.value.advice


def test_a_model_the_server_does_not_serve_is_model_not_found(wire: ModelWire) -> None:
    body = (
        '{"error": {"message": "The model `gpt-relayline-test` does not exist or you do not '
        'have access to it.", "type": "invalid_request_error", "code": "model_not_found"}}'
    )
    wire.queue(Reply([], status=404, body=body))
    with pytest.raises(ProviderError) as caught:
        collect(openai_model(wire))
    assert caught.value.reason == "model_not_found"
    assert caught.value.advice == (
        "The model provider does not serve the model 'openai:gpt-relayline-test' (HTTP 404): "
        "set the model of the agent's PydanticAIProvider to a model it serves."
    )


def closed_port() -> Iterator[str]:
    """A base URL whose port is bound and never listening: connections are refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture
def closed_url() -> Iterator[str]:
    yield from closed_port()


def test_nobody_at_the_base_url_is_provider_unreachable_found_before_any_call(
    closed_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", closed_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    settings = Settings.from_env({"RELAYLINE_MODEL": "openai:gpt-relayline-test"})
    provider = PydanticAIProvider.from_settings(settings)
    [problem] = provider.preflight()
    assert problem.code == "provider_unreachable"
    assert problem.message.startswith(
        f"The model provider for 'openai:gpt-relayline-test' at {closed_url}"
    )
    assert problem.message.endswith("start it, or set OPENAI_BASE_URL to where it listens.")
    with pytest.raises(ProviderError) as caught:  # and a call says the same
        collect(provider)
    assert caught.value.reason == "provider_unreachable"
    assert caught.value.advice == problem.message


@pytest.mark.parametrize(
    ("model", "code", "says"),
    [
        # the SDK of the provider prefix is not installed (dev installs openai, anthropic)
        (
            "groq:llama-relayline-test",
            "provider_missing_extra",
            "The model 'groq:llama-relayline-test' needs its SDK, which is not installed: "
            "install relayline[groq] where relayline runs.",
        ),
        (
            "anthropic:claude-relayline-test",
            "provider_auth",
            "The model 'anthropic:claude-relayline-test' needs an API key: set ANTHROPIC_API_KEY.",
        ),
        (
            "opnai:gpt-relayline-test",
            "model_not_found",
            "The model name 'opnai:gpt-relayline-test' is not one pydantic-ai knows: set "
            "RELAYLINE_MODEL to '<provider>:<model>', e.g. 'openai:gpt-6.1-terra'.",
        ),
    ],
)
def test_a_model_that_cannot_be_built_is_found_by_the_preflight_and_by_a_call(
    model: str, code: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    provider = PydanticAIProvider.from_settings(Settings(model=model))
    assert [(p.code, p.message) for p in provider.preflight()] == [(code, says)]
    with pytest.raises(ProviderError) as caught:
        collect(provider)
    assert (caught.value.reason, caught.value.advice) == (code, says)


def test_preflight_of_a_listening_server_finds_nothing_and_calls_no_model(wire: ModelWire) -> None:
    assert openai_model(wire).preflight() == []
    assert wire.received == []
