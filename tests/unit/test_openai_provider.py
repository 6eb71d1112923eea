"""OpenAIProvider against a real local HTTP server replaying recorded streams.

The server speaks HTTP/1.1 with chunked transfer encoding like OpenAI, Ollama and vLLM
do, so broken connections and stalls exercise the same code paths as in production.
"""

# ruff: noqa: E501  -- recorded SSE lines are kept verbatim, one event per line

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from relayline.shared.errors import ProviderError
from relayline.shared.messages import Message, ToolCallPart, ToolResultPart
from relayline.shared.providers.base import (
    ModelDelta,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from relayline.shared.providers.openai import OpenAIProvider

API_KEY = "sk-test-0123456789abcdef"

# Recorded from OpenAI-compatible servers (ids and timestamps shortened).
PLAIN_TEXT = r"""
data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

: keepalive

data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" wörld"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}

data: [DONE]
"""

# DeepSeek/vLLM send "reasoning_content"; Ollama sends "reasoning". KEY is substituted.
REASONING = r"""
data: {"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":"","KEY":"Let me"},"finish_reason":null}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"content":null,"KEY":" think."},"finish_reason":null}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"content":"42","KEY":null},"finish_reason":null}]}

data: {"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":9,"total_tokens":16}}

data: [DONE]
"""

# Two parallel calls whose argument fragments interleave by index.
PARALLEL_TOOL_CALLS = r"""
data: {"id":"c3","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": "}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"c3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"c3","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":22,"total_tokens":62}}

data: [DONE]
"""

FIRST_WORDS = r"""
data: {"id":"c4","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}

data: {"id":"c4","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}
"""


@dataclasses.dataclass(frozen=True)
class Received:
    path: str
    authorization: str | None
    body: dict[str, Any]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # backstop: no handler thread can outlive a test by more than this
    server: FakeOpenAI

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append(Received(self.path, self.headers.get("Authorization"), body))
        try:
            self.server.reply(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up first, as some tests intend

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def write_chunk(self, text: str) -> None:
        data = text.encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


Reply = Callable[[_Handler], None]


class FakeOpenAI(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins every handler thread

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[Received] = []
        self.reply: Reply = streamed(PLAIN_TEXT)
        self.release = threading.Event()  # set at teardown to end stalls
        self.stall_expired = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def stall(self) -> None:
        if not self.release.wait(timeout=10):
            self.stall_expired.set()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def streamed(text: str, *, cut: bool = False, stall_after: int | None = None) -> Reply:
    """Replay ``text`` one SSE event per HTTP chunk. ``cut`` closes the socket without
    the terminating chunk; ``stall_after`` stops after that many events until release."""
    events = [event + "\n\n" for event in text.strip().split("\n\n")]

    def reply(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for i, event in enumerate(events):
            if i == stall_after:
                handler.server.stall()
                handler.close_connection = True
                return
            handler.write_chunk(event)
        if cut:
            handler.close_connection = True
            return
        handler.wfile.write(b"0\r\n\r\n")

    return reply


def status(code: int, body: str, content_type: str = "application/json") -> Reply:
    def reply(handler: _Handler) -> None:
        data = body.encode("utf-8")
        handler.send_response(code)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(data)

    return reply


def stall_before_headers(handler: _Handler) -> None:
    handler.server.stall()
    handler.close_connection = True


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    srv = FakeOpenAI()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    thread.join()


@pytest.fixture
def session(server: FakeOpenAI) -> Iterator[requests.Session]:
    # Every reply says "Connection: close": the installed urllib3 (2.8) does not close
    # pooled sockets on Session.close(), and a kept-alive one would pin its handler thread.
    with requests.Session() as s:
        yield s


@pytest.fixture
def make_provider(server: FakeOpenAI, session: requests.Session) -> Callable[..., OpenAIProvider]:
    def make(**kwargs: Any) -> OpenAIProvider:
        options: dict[str, Any] = {"api_key": API_KEY, "base_url": server.base_url}
        options.update(kwargs)
        return OpenAIProvider("gpt-4o-mini", session=session, **options)

    return make


def simple_request(text: str = "Hi") -> ModelRequest:
    return ModelRequest(system_prompt=None, messages=(Message.user(text, id="m1"),), tools=())


def collect(provider: OpenAIProvider, request: ModelRequest | None = None) -> list[ModelDelta]:
    return list(provider.stream(request or simple_request()))


def collect_until_error(provider: OpenAIProvider) -> tuple[list[ModelDelta], ProviderError]:
    seen: list[ModelDelta] = []
    with pytest.raises(ProviderError) as info:
        for delta in provider.stream(simple_request()):
            seen.append(delta)
    return seen, info.value


def test_plain_text_streams_deltas_and_usage(server: FakeOpenAI, make_provider: Any) -> None:
    server.reply = streamed(PLAIN_TEXT)
    deltas = collect(make_provider())
    # The empty first content and the keepalive comment yield nothing.
    assert deltas == [
        TextDelta("Hello"),
        TextDelta(" wörld"),
        TextDelta("!"),
        Usage(input_tokens=12, output_tokens=3),
    ]


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_is_streamed_separately(server: FakeOpenAI, make_provider: Any, key: str) -> None:
    server.reply = streamed(REASONING.replace("KEY", key))
    assert collect(make_provider()) == [
        ReasoningDelta("Let me"),
        ReasoningDelta(" think."),
        TextDelta("42"),
        Usage(input_tokens=7, output_tokens=9),
    ]


def test_parallel_tool_calls_assemble_by_index(server: FakeOpenAI, make_provider: Any) -> None:
    server.reply = streamed(PARALLEL_TOOL_CALLS)
    deltas = collect(make_provider())
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            call = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = delta.id or call["id"]
            call["name"] = delta.name or call["name"]
            call["arguments"] += delta.arguments
    assert {i: (c["id"], c["name"], json.loads(c["arguments"])) for i, c in calls.items()} == {
        0: ("call_a", "get_weather", {"city": "Paris"}),
        1: ("call_b", "get_time", {"tz": "CET"}),
    }
    assert [d.index for d in deltas if isinstance(d, ToolCallDelta)] == [0, 0, 1, 0, 1, 1]
    assert deltas[-1] == Usage(input_tokens=40, output_tokens=22)


def test_request_body_shape(server: FakeOpenAI, make_provider: Any) -> None:
    weather_params = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    request = ModelRequest(
        system_prompt="You are terse.",
        messages=(
            Message.user("Weather in Paris, and the time?", id="m1"),
            Message(
                id="m2",
                role="assistant",
                reasoning="Two tools needed.",  # never sent back
                tool_calls=(
                    ToolCallPart("call_a", "get_weather", {"city": "Paris"}),
                    ToolCallPart("call_b", "get_time", {"tz": "CET"}),
                ),
            ),
            Message(
                id="m3",
                role="tool",
                tool_results=(
                    ToolResultPart("call_a", "get_weather", "18°C, sunny"),
                    ToolResultPart("call_b", "get_time", "unknown zone", is_error=True),
                ),
            ),
            Message(id="m4", role="assistant", text="18°C and sunny.", reasoning="Done."),
        ),
        tools=(ToolSchema("get_weather", "Current weather for a city.", weather_params),),
    )
    collect(make_provider(extra_body={"temperature": 0, "stream": False}), request)

    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.authorization == f"Bearer {API_KEY}"
    assert received.body == {
        "model": "gpt-4o-mini",
        "stream": True,  # extra_body cannot switch streaming off
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris, and the time?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz":"CET"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "18°C, sunny"},
            {"role": "tool", "tool_call_id": "call_b", "content": "Error: unknown zone"},
            {"role": "assistant", "content": "18°C and sunny."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": weather_params,
                },
            }
        ],
    }


def test_no_api_key_sends_no_authorization_and_no_tools(
    server: FakeOpenAI, make_provider: Any
) -> None:
    collect(make_provider(api_key=None))
    [received] = server.received
    assert received.authorization is None
    assert "tools" not in received.body
    assert received.body["messages"] == [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    ("code", "body", "expected"),
    [
        (500, "upstream exploded\n", "upstream exploded"),
        (
            429,
            '{"error":{"message":"Rate limit reached for gpt-4o-mini.","type":"requests",'
            '"code":"rate_limit_exceeded"}}',
            "Rate limit reached for gpt-4o-mini.",
        ),
    ],
)
def test_error_status_raises_provider_error(
    server: FakeOpenAI, make_provider: Any, code: int, body: str, expected: str
) -> None:
    server.reply = status(code, body)
    _, error = collect_until_error(make_provider())
    assert f"HTTP {code}" in error.message
    assert expected in error.message


def test_error_messages_never_contain_the_api_key(server: FakeOpenAI, make_provider: Any) -> None:
    # Some proxies echo the credential back in their error body.
    server.reply = status(401, json.dumps({"error": {"message": f"Bad key: Bearer {API_KEY}"}}))
    _, error = collect_until_error(make_provider())
    assert "HTTP 401" in error.message
    assert API_KEY not in str(error)


def test_connection_cut_mid_stream_raises_after_partial_output(
    server: FakeOpenAI, make_provider: Any
) -> None:
    server.reply = streamed(FIRST_WORDS, cut=True)
    seen, error = collect_until_error(make_provider())
    assert seen == [TextDelta("Hello"), TextDelta(" there")]
    assert "broke off" in error.message


def test_stream_ending_without_done_or_finish_reason_raises(
    server: FakeOpenAI, make_provider: Any
) -> None:
    # The HTTP body ends cleanly, yet the model never finished: treat as truncated.
    server.reply = streamed(FIRST_WORDS)
    seen, error = collect_until_error(make_provider())
    assert seen == [TextDelta("Hello"), TextDelta(" there")]
    assert "[DONE]" in error.message


def test_finish_reason_without_done_is_accepted(server: FakeOpenAI, make_provider: Any) -> None:
    server.reply = streamed(PLAIN_TEXT.replace("data: [DONE]", ": no done marker here"))
    assert collect(make_provider())[-1] == Usage(input_tokens=12, output_tokens=3)


@pytest.mark.parametrize("reply", [streamed(FIRST_WORDS, stall_after=1), stall_before_headers])
def test_read_timeout_raises_provider_error(
    server: FakeOpenAI, make_provider: Any, reply: Reply
) -> None:
    server.reply = reply
    _, error = collect_until_error(make_provider(timeout=0.3))
    assert "timed out" in error.message
    assert not server.stall_expired.is_set()  # the client gave up, not the server


def test_unreachable_server_raises_provider_error() -> None:
    # A bound but not listening socket refuses connections without racing for a port.
    with socket.socket() as sock, requests.Session() as session:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        provider = OpenAIProvider(
            "llama3.1", base_url=f"http://127.0.0.1:{port}/v1", session=session
        )
        with pytest.raises(ProviderError, match="could not be reached"):
            collect(provider)


def test_malformed_json_line_raises_provider_error(server: FakeOpenAI, make_provider: Any) -> None:
    server.reply = streamed(FIRST_WORDS + '\ndata: {"choices":[{"delta":\n\ndata: [DONE]\n')
    seen, error = collect_until_error(make_provider())
    assert seen == [TextDelta("Hello"), TextDelta(" there")]
    assert "malformed JSON" in error.message


def test_error_object_inside_stream_raises_provider_error(
    server: FakeOpenAI, make_provider: Any
) -> None:
    server.reply = streamed(
        FIRST_WORDS + '\ndata: {"error":{"message":"The model is overloaded.","code":503}}\n'
    )
    _, error = collect_until_error(make_provider())
    assert "The model is overloaded." in error.message


def test_empty_model_is_rejected() -> None:
    with pytest.raises(ValueError, match="model name"):
        OpenAIProvider("  ")


def test_agent_runs_on_the_provider_and_records_usage(
    server: FakeOpenAI, make_provider: Any, tmp_path: Any
) -> None:
    from relayline.shared.agent import Agent, AgentSpec
    from relayline.shared.persistence import Store

    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    agent = Agent("oa", AgentSpec(provider=make_provider()), store)
    state = agent.run("Hi")
    assert state.status == "completed"
    stored = agent.history()[-1]
    assert stored.text == state.message and stored.text
    assert stored.meta["usage"]["input"] is not None
    store.dispose()


def test_http_error_fails_the_run_with_the_status(
    server: FakeOpenAI, make_provider: Any, tmp_path: Any
) -> None:
    from relayline.shared.agent import Agent, AgentSpec
    from relayline.shared.persistence import Store

    server.reply = status(503, '{"error": {"message": "overloaded"}}')
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    state = Agent("oa", AgentSpec(provider=make_provider()), store).run("Hi")
    assert state.status == "failed"
    assert state.error == "The model provider failed (HTTP 503): try again in a moment."
    assert state.error_code == "provider_error"
    store.dispose()


# Failure reasons: the code a failed run reports and what its owner is told to set --------

OPENAI_401 = json.dumps(
    {
        "error": {
            "message": f"Incorrect API key provided: {API_KEY}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
)
OPENAI_404_MODEL = json.dumps(
    {
        "error": {
            "message": "The model `gpt-nope` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
)
OLLAMA_404_MODEL = '{"error":"model \\"llama9\\" not found, try pulling it first"}'


def from_settings(server: FakeOpenAI, **settings: Any) -> OpenAIProvider:
    from relayline.shared.settings import Settings

    options: dict[str, Any] = {
        "model": "gpt-nope",
        "openai_api_key": API_KEY,
        "openai_base_url": server.base_url,
    }
    options.update(settings)
    return OpenAIProvider.from_settings(Settings(**options))


@pytest.mark.parametrize(
    ("code", "body", "reason", "advice"),
    [
        (
            401,
            OPENAI_401,
            "provider_auth",
            "refused the API key (HTTP 401): set OPENAI_API_KEY to a valid key.",
        ),
        (
            403,
            OPENAI_401,
            "provider_auth",
            "refused the API key (HTTP 403): set OPENAI_API_KEY to a valid key.",
        ),
        (
            404,
            OPENAI_404_MODEL,
            "model_not_found",
            "does not serve the model 'gpt-nope' (HTTP 404): set RELAYLINE_MODEL to a model it serves.",
        ),
        (404, OLLAMA_404_MODEL, "model_not_found", "set RELAYLINE_MODEL to a model it serves."),
        (
            404,
            "404 page not found",
            "provider_error",
            "(HTTP 404): check OPENAI_BASE_URL (an OpenAI-compatible API usually ends in /v1).",
        ),
        (
            429,
            '{"error": {"message": "You exceeded your current quota.", "code": "insufficient_quota"}}',
            "provider_rate_limited",
            "It said: You exceeded your current quota.",
        ),
    ],
)
def test_a_refused_call_says_why_and_what_to_set(
    server: FakeOpenAI, code: int, body: str, reason: str, advice: str
) -> None:
    server.reply = status(code, body)
    provider = from_settings(server)
    _, error = collect_until_error(provider)
    assert error.reason == reason
    assert error.advice is not None and error.advice.endswith(advice), error.advice
    assert API_KEY not in error.advice and API_KEY not in error.message


def test_advice_names_the_constructor_arguments_when_no_setting_was_used(
    server: FakeOpenAI, make_provider: Any
) -> None:
    server.reply = status(401, OPENAI_401)
    _, error = collect_until_error(make_provider())
    assert error.reason == "provider_auth"
    assert error.advice == (
        f"The model provider at {server.base_url} refused the API key (HTTP 401): set the "
        "api_key of the agent's OpenAIProvider to a valid key."
    )


def test_no_key_at_all_is_said_as_a_missing_key(server: FakeOpenAI) -> None:
    server.reply = status(401, '{"error": {"message": "You didn\'t provide an API key."}}')
    _, error = collect_until_error(from_settings(server, openai_api_key=None))
    assert error.advice == (
        f"The model provider at {server.base_url} needs an API key (HTTP 401): set OPENAI_API_KEY."
    )


def test_a_server_nobody_listens_at_is_provider_unreachable_naming_the_base_url() -> None:
    from relayline.shared.settings import Settings

    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        settings = Settings(model="llama3.1", openai_base_url=base_url)
        provider = OpenAIProvider.from_settings(settings)
        with pytest.raises(ProviderError) as caught:
            collect(provider)
        assert caught.value.reason == "provider_unreachable"
        assert caught.value.advice == (
            f"The model provider at {base_url} cannot be reached (connection refused): start "
            "it, or set OPENAI_BASE_URL to where it listens."
        )
        [problem] = provider.preflight()  # found before any call, the same words
        assert problem.code == "provider_unreachable"
        assert problem.message == (
            f"The model provider at {base_url} cannot be reached (connection refused at "
            f"127.0.0.1:{sock.getsockname()[1]}): start it, or set OPENAI_BASE_URL to where "
            "it listens."
        )


def test_a_call_that_times_out_is_timeout(server: FakeOpenAI, make_provider: Any) -> None:
    server.reply = stall_before_headers
    _, error = collect_until_error(make_provider(timeout=0.3))
    assert error.reason == "timeout"
    assert error.advice is not None and "did not answer within 0.3 s" in error.advice


def test_a_stream_broken_off_is_a_provider_error_saying_so(
    server: FakeOpenAI, make_provider: Any
) -> None:
    server.reply = streamed(FIRST_WORDS, cut=True)
    _, error = collect_until_error(make_provider())
    assert error.reason == "provider_error"
    assert (
        error.advice == "The model provider's answer broke off before it was complete: try again."
    )
    assert server.base_url not in error.advice  # the host stays in the operator's log


def test_preflight_of_a_listening_server_with_a_key_finds_nothing(server: FakeOpenAI) -> None:
    assert from_settings(server).preflight() == []
    assert server.received == []  # no model call, not even a request
