"""Provider for OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server).

One streamed ``POST {base_url}/chat/completions`` per model call, read as server-sent
events and turned into provider deltas. Every failure (HTTP status, network, timeout,
a stream cut short, garbage on the wire) surfaces as :class:`ProviderError` with its
failure code (``provider_auth`` for 401/403, ``model_not_found`` for a 404 about the
model, ``provider_rate_limited``, ``provider_unreachable``, ``timeout``, else
``provider_error``) and, for the common ones, advice naming what to set; no message ever
contains the API key. ``preflight()`` finds a missing key and a base URL nobody listens
at before the first call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3.exceptions

from relayline.shared import jsonutil
from relayline.shared.errors import FailureCode, ProviderError
from relayline.shared.failures import redact_keys
from relayline.shared.messages import Message
from relayline.shared.providers.base import (
    ModelDelta,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from relayline.shared.providers.checks import ModelProblem, connection_cause, unreachable
from relayline.shared.settings import Settings
from relayline.shared.texts import PROVIDER_BROKE_OFF

_NAME = "OpenAI-compatible provider"
_CANCELLED = "call was cancelled: the run is stopping"
_EXCERPT_CHARS = 300
_MAX_CONNECT_TIMEOUT = 10.0
_STATUS_HINTS = {
    401: " (check the API key)",
    403: " (check the API key's permissions)",
    404: " (check base_url and the model name)",
}
#: the host of OpenAI's own API, which always needs a key (a local server may not)
_OPENAI_HOST = "api.openai.com"


class OpenAIProvider:
    """Streams one chat completion per :meth:`stream` call; holds no conversation state."""

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str = "https://api.openai.com/v1",
        timeout: float = 60.0,
        session: requests.Session | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("OpenAIProvider needs a model name, e.g. 'gpt-4o-mini' or 'llama3.1'.")
        if timeout <= 0:
            raise ValueError(f"OpenAIProvider timeout must be positive, got {timeout!r}.")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._api_key = api_key or None
        self._owns_session = session is None
        self._session = session if session is not None else requests.Session()
        self._extra_body = dict(extra_body or {})
        #: what advice tells a person to set: the settings' variables (from_settings),
        #: else the constructor's arguments
        self._names = _ARGUMENTS

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIProvider:
        """Configured by OPENAI_API_KEY, OPENAI_BASE_URL and RELAYLINE_MODEL."""
        if not settings.model:
            raise ValueError("Set RELAYLINE_MODEL to use the OpenAI-compatible provider.")
        provider = cls(
            settings.model, api_key=settings.openai_api_key, base_url=settings.openai_base_url
        )
        provider._names = _VARIABLES
        return provider

    def preflight(self) -> list[ModelProblem]:
        """What would fail every call, found without calling the model: no API key for
        OpenAI's own API, nothing listening at the base URL."""
        problems: list[ModelProblem] = []
        if self._api_key is None and urlsplit(self.base_url).hostname == _OPENAI_HOST:
            problems.append(
                ModelProblem(
                    "provider_auth",
                    f"The OpenAI API at {self.base_url} needs an API key: set {self._names.key}.",
                )
            )
        cause = unreachable(self.base_url)
        if cause is not None:
            problems.append(ModelProblem("provider_unreachable", self._unreachable_advice(cause)))
        return problems

    def close(self) -> None:
        """Close the HTTP session if this provider created it."""
        if self._owns_session:
            self._session.close()

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions``."""
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        for message in request.messages:
            messages.extend(_wire_messages(message))
        # extra_body goes between the defaults and the fixed keys: callers may tune
        # sampling or replace stream_options, but never switch off streaming.
        body: dict[str, Any] = {
            "stream_options": {"include_usage": True},
            **self._extra_body,
            "model": self.model,
            "messages": messages,
            "stream": True,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        return body

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        url = f"{self.base_url}/chat/completions"
        if request.stop_signal is not None and request.stop_signal.is_set():
            raise self._error(_CANCELLED)
        try:
            data = jsonutil.dumps(self.build_body(request)).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise self._error(f"request cannot be encoded as JSON: {exc}") from exc
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        timeout = (min(self.timeout, _MAX_CONNECT_TIMEOUT), self.timeout)
        try:
            response = self._session.post(
                url, data=data, headers=headers, timeout=timeout, stream=True
            )
        except requests.RequestException as exc:
            raise self._network_error(url, exc, streaming=False) from exc
        # A stop while the body streams shuts the socket down from the stopping thread,
        # which ends the blocked read at once (a stop before the headers, once they come).
        aborted = threading.Event()

        def abort() -> None:
            aborted.set()
            _shutdown(response)

        unregister = request.stop_signal.on_stop(abort) if request.stop_signal is not None else None
        try:
            with response:
                if not 200 <= response.status_code < 300:
                    body = response.content.decode("utf-8", errors="replace")
                    raise self._http_error(url, response.status_code, body)
                # chunk_size=None yields each chunk as it arrives instead of waiting to fill
                # a buffer; bytes are decoded here because requests assumes Latin-1 for
                # text/event-stream without a charset.
                lines = response.iter_lines(chunk_size=None)
                try:
                    for delta in self._parse(lines):
                        if aborted.is_set():
                            break
                        yield delta
                except requests.RequestException as exc:
                    if aborted.is_set():
                        raise self._error(_CANCELLED) from exc
                    raise self._network_error(url, exc, streaming=True) from exc
                except ProviderError as exc:
                    if aborted.is_set():
                        raise self._error(_CANCELLED) from exc
                    raise
                if aborted.is_set():
                    raise self._error(_CANCELLED)
        finally:
            if unregister is not None:
                unregister()

    def _parse(self, lines: Iterable[bytes]) -> Iterator[ModelDelta]:
        finished = False
        for raw in lines:
            line = raw.decode("utf-8", errors="replace")
            # Blank lines separate events; ':' lines are keepalive comments; other
            # SSE fields (event:, id:) carry nothing the chat API relies on.
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                return
            try:
                chunk = json.loads(payload)
            except json.JSONDecodeError as exc:
                raise self._error(
                    f"sent malformed JSON in the stream: {_excerpt(payload)}"
                ) from exc
            if not isinstance(chunk, dict):
                raise self._error(f"sent an unexpected stream chunk: {_excerpt(payload)}")
            if chunk.get("error") is not None:
                raise self._error(f"reported an error mid-stream: {_error_detail(payload)}")
            choices = chunk.get("choices") or []
            if choices and isinstance(choices[0], dict):
                yield from _choice_deltas(choices[0])
                finished = finished or choices[0].get("finish_reason") is not None
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                yield Usage(
                    input_tokens=_int_or_none(usage.get("prompt_tokens")),
                    output_tokens=_int_or_none(usage.get("completion_tokens")),
                )
        # Some servers skip [DONE] after a finish_reason; without either, the
        # connection dropped and the answer may be truncated.
        if not finished:
            raise self._error(
                "ended the stream before the response was complete (no [DONE] and no "
                "finish_reason): the connection was probably cut.",
                advice=PROVIDER_BROKE_OFF,
            )

    def _network_error(
        self, url: str, exc: requests.RequestException, *, streaming: bool
    ) -> ProviderError:
        # Mid-stream read timeouts arrive as ConnectionError wrapping urllib3's error.
        timed_out = isinstance(exc, requests.Timeout) or any(
            isinstance(arg, urllib3.exceptions.TimeoutError) for arg in exc.args
        )
        if timed_out:
            advice = (
                f"The model provider at {self.base_url} did not answer within "
                f"{self.timeout:g} s: try again, or check that it is not overloaded."
            )
            text = f"at {url} timed out (timeout {self.timeout:g}s): {exc}"
            return self._error(text, reason="timeout", advice=advice)
        if streaming:
            return self._error(f"at {url} broke off the stream: {exc}", advice=PROVIDER_BROKE_OFF)
        advice = self._unreachable_advice(connection_cause(str(exc)))
        text = f"at {url} could not be reached: {exc}"
        return self._error(text, reason="provider_unreachable", advice=advice)

    def _http_error(self, url: str, status: int, body: str) -> ProviderError:
        """The error of a refused call, with its failure code and what to set."""
        detail = _error_detail(body)
        text = f"answered HTTP {status}{_STATUS_HINTS.get(status, '')}: {detail}"
        names = self._names
        if status in (401, 403):
            where = f"The model provider at {self.base_url}"
            if self._api_key is None:
                advice = f"{where} needs an API key (HTTP {status}): set {names.key}."
            else:
                advice = (
                    f"{where} refused the API key (HTTP {status}): set {names.key} to a valid key."
                )
            return self._error(text, reason="provider_auth", advice=advice)
        if status == 404 and _about_the_model(body, self.model):
            advice = (
                f"The model provider at {self.base_url} does not serve the model "
                f"'{self.model}' (HTTP 404): set {names.model} to a model it serves."
            )
            return self._error(text, reason="model_not_found", advice=advice)
        if status == 404:
            advice = (
                f"The model provider has no chat completions API at {url} (HTTP 404): check "
                f"{names.base_url} (an OpenAI-compatible API usually ends in /v1)."
            )
            return self._error(text, advice=advice)
        if status == 429:
            advice = (
                "The model provider refused the call for its rate or quota limits (HTTP "
                f"429): try again later, or raise the account's limits. It said: {detail}"
            )
            return self._error(text, reason="provider_rate_limited", advice=advice)
        if status >= 500:
            advice = f"The model provider failed (HTTP {status}): try again in a moment."
            return self._error(text, advice=advice)
        return self._error(text)

    def _unreachable_advice(self, cause: str) -> str:
        return (
            f"The model provider at {self.base_url} cannot be reached ({cause}): start it, "
            f"or set {self._names.base_url} to where it listens."
        )

    def _error(
        self, text: str, *, reason: FailureCode | None = None, advice: str | None = None
    ) -> ProviderError:
        # Servers and proxies sometimes echo request headers back in error bodies.
        secrets = (self._api_key,) if self._api_key else ()
        message = redact_keys(f"{_NAME} {text}", secrets)
        advice = redact_keys(advice, secrets) if advice is not None else None
        return ProviderError(message, reason=reason, advice=advice)


@dataclasses.dataclass(frozen=True)
class _Names:
    """How advice names the key, the base URL and the model."""

    key: str
    base_url: str
    model: str


_VARIABLES = _Names("OPENAI_API_KEY", "OPENAI_BASE_URL", "RELAYLINE_MODEL")
_ARGUMENTS = _Names(
    "the api_key of the agent's OpenAIProvider",
    "the base_url of the agent's OpenAIProvider",
    "the model of the agent's OpenAIProvider",
)


def _about_the_model(body: str, model: str) -> bool:
    """Whether a 404's body is about the model (OpenAI's ``model_not_found``, Ollama's
    ``model "x" not found``), not about the path."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("code") == "model_not_found":
        return True
    text = _error_detail(body).lower()
    return model.lower() in text or "model" in text


def _shutdown(response: requests.Response) -> None:
    """Shut the response's socket down (from any thread): a read blocked on it returns."""
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # the socket under http.client's file object
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "role": "tool",
                "tool_call_id": r.call_id,
                "content": f"Error: {r.content}" if r.is_error else r.content,
            }
            for r in message.tool_results
        ]
    if message.role != "assistant":
        return [{"role": message.role, "content": message.text}]
    if not message.tool_calls:
        # Reasoning is never sent back; content must still be a string without tool calls.
        return [{"role": "assistant", "content": message.text}]
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": jsonutil.dumps(c.inputs)},
        }
        for c in message.tool_calls
    ]
    return [{"role": "assistant", "content": message.text or None, "tool_calls": calls}]


def _choice_deltas(choice: dict[str, Any]) -> Iterator[ModelDelta]:
    delta = choice.get("delta") or {}
    # Ollama and vLLM say "reasoning", DeepSeek and others "reasoning_content".
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        yield ReasoningDelta(reasoning)
    content = delta.get("content")
    if isinstance(content, str) and content:
        yield TextDelta(content)
    for position, call in enumerate(delta.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):  # a few servers send an object, not a string
            arguments = jsonutil.dumps(arguments)
        call_id, name = call.get("id") or None, function.get("name") or None
        if call_id or name or arguments:
            index = call.get("index")
            yield ToolCallDelta(
                index=index if isinstance(index, int) else position,
                id=call_id,
                name=name,
                arguments=arguments,
            )


def _error_detail(body: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else a short excerpt."""
    try:
        data = json.loads(body)
    except ValueError:
        return _excerpt(body) or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return _excerpt(error["message"])
    if isinstance(error, str):  # Ollama's shape
        return _excerpt(error)
    return _excerpt(body)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "…"


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
