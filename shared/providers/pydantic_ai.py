"""Every provider pydantic-ai supports, through its direct model API.

``PydanticAIProvider("anthropic:claude-sonnet-5-5")`` (or any pydantic-ai model name, or a
``pydantic_ai.models.Model``) streams one model call per :meth:`PydanticAIProvider.stream`
with ``pydantic_ai.direct``: our messages and tool schemas become pydantic-ai's message
types and ``ModelRequestParameters``, its streamed parts become our deltas. pydantic-ai
does the provider's wire format, retries of its SDK, reasoning and usage; our loop stays
the durable one. Keys come from each provider's usual environment variables, which
pydantic-ai reads (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GOOGLE_API_KEY``, ...).

Install with ``relayline[openai]``, ``relayline[anthropic]``, ``relayline[google]``, ...
(``pydantic-ai-slim`` with that provider's SDK only). Every failure surfaces as
:class:`ProviderError`, with the known keys replaced by ``***``, its failure code
(a missing SDK is ``provider_missing_extra``, a missing or refused key
``provider_auth``, ...) and advice naming the provider's own variable to set.
``preflight()`` finds a missing SDK, a missing key and a base URL nobody listens at
before the first call.

Provider state that must go back to the model verbatim (a thinking block's signature,
Gemini's thought signatures on calls) is kept in the assistant message's ``meta`` under
``"replay"``; reasoning without such state is not sent back, as with OpenAIProvider.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from relayline.shared import jsonutil
from relayline.shared.errors import FailureCode, ProviderError
from relayline.shared.failures import redact_keys
from relayline.shared.messages import Message
from relayline.shared.providers.base import (
    MetaDelta,
    ModelDelta,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from relayline.shared.providers.checks import ModelProblem, unreachable
from relayline.shared.settings import Settings
from relayline.shared.texts import PROVIDER_BROKE_OFF

if TYPE_CHECKING:
    from pydantic_ai import messages as pai
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings

#: the meta key of provider state replayed to the model with the message
REPLAY_KEY = "replay"
_EXCERPT_CHARS = 300
_STATUS_HINTS = {
    401: " (check the API key)",
    403: " (check the API key's permissions)",
    404: " (check the base URL and the model name)",
}
#: the extra that installs a provider prefix's SDK
_EXTRAS = {
    "anthropic": "anthropic",
    "google": "google",
    "google-cloud": "google",
    "groq": "groq",
    "mistral": "mistral",
    "bedrock": "bedrock",
    "cohere": "cohere",
}
#: the variable holding a provider prefix's key (advice names it)
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GOOGLE_API_KEY",
    "google": "GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "grok": "XAI_API_KEY",
    "xai": "XAI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "huggingface": "HF_TOKEN",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK (or the AWS credentials)",
}
#: the variable holding a provider prefix's base URL
_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_BASE_URL",
}
#: the variables pydantic-ai's own "set the `X` environment variable" names
_NAMED_VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]+)`")


class PydanticAIProvider:
    """Streams one model call through pydantic-ai; holds no conversation state.

    ``model`` is a pydantic-ai model name (``"openai:gpt-6.1-terra"``,
    ``"anthropic:claude-sonnet-5-5"``, ``"google:gemini-3.8-flash"``, ``"groq:..."``,
    ``"bedrock:..."``, ...), resolved on the first call, or a ``Model`` instance
    (``OpenAIChatModel(..., provider=OpenAIProvider(base_url=...))`` for any
    OpenAI-compatible server). ``model_settings`` go with every call (temperature,
    max_tokens, thinking, ...). ``secrets`` are extra strings never to appear in an error.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        model_settings: ModelSettings | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        if isinstance(model, str) and not model.strip():
            raise ValueError(
                "PydanticAIProvider needs a model, e.g. 'openai:gpt-6.1-terra' or "
                "'anthropic:claude-sonnet-5-5'."
            )
        self._spec = model
        self._model: Model | None = None if isinstance(model, str) else model
        self._lock = threading.Lock()
        self.model_settings = model_settings
        self._secrets = tuple(s for s in secrets if s and len(s) >= 4)
        #: how advice names the model: RELAYLINE_MODEL when it came from there
        self._model_name = "the model of the agent's PydanticAIProvider"

    @classmethod
    def from_settings(cls, settings: Settings) -> PydanticAIProvider:
        """``RELAYLINE_MODEL=<provider>:<model>``; keys from the provider's own variables."""
        if not settings.model:
            raise ValueError("Set RELAYLINE_MODEL, e.g. 'openai:gpt-6.1-terra'.")
        provider = cls(settings.model, secrets=settings.model_api_keys)
        provider._model_name = "RELAYLINE_MODEL"
        return provider

    def preflight(self) -> list[ModelProblem]:
        """What would fail every call, found without calling the model: the SDK not
        installed, no key, an unknown model name, nothing listening at the base URL."""
        try:
            model = self.model()
        except ProviderError as exc:
            return [ModelProblem(exc.reason, exc.advice or exc.message)]
        base_url = getattr(model, "base_url", None)
        if not isinstance(base_url, str) or not base_url:
            return []
        cause = unreachable(base_url)
        if cause is None:
            return []
        return [ModelProblem("provider_unreachable", self._unreachable_advice(base_url, cause))]

    @property
    def name(self) -> str:
        if isinstance(self._spec, str):
            return self._spec
        return f"{self._spec.system}:{self._spec.model_name}"

    def model(self) -> Model:
        """The pydantic-ai model, resolved from its name once (thread-safe)."""
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                assert isinstance(self._spec, str)
                self._model = self._infer(self._spec)
            return self._model

    def _infer(self, name: str) -> Model:
        try:
            from pydantic_ai.models import infer_model
        except ImportError as exc:
            raise self._error(
                f"needs pydantic-ai: install relayline[openai], relayline[anthropic], ... ({exc})"
            ) from exc
        try:
            return infer_model(name)
        except ImportError as exc:
            extra = _EXTRAS.get(name.partition(":")[0], "openai")
            missing = (
                f"The model '{name}' needs its SDK, which is not installed: install "
                f"relayline[{extra}] where relayline runs."
            )
            raise self._error(
                f"cannot load the SDK for {name!r}: install relayline[{extra}] ({exc})",
                reason="provider_missing_extra",
                advice=missing,
            ) from exc
        except Exception as exc:  # unknown prefix, missing key: configuration, said once
            reason, advice = self._configuration_advice(name, str(exc))
            raise self._error(
                f"cannot use model {name!r}: {_describe(exc)}", reason=reason, advice=advice
            ) from exc

    def _configuration_advice(self, name: str, text: str) -> tuple[FailureCode, str | None]:
        """The code and advice of a model pydantic-ai refused to build."""
        if "unknown model" in text.lower():
            advice = (
                f"The model name '{name}' is not one pydantic-ai knows: set {self._model_name} "
                "to '<provider>:<model>', e.g. 'openai:gpt-6.1-terra'."
            )
            return "model_not_found", advice
        named = _NAMED_VARIABLE.search(text)
        if named is None:
            return "provider_error", None
        variable = named.group(1)
        if variable.endswith("_URL"):
            return "provider_unreachable", f"The model '{name}' needs {variable}: set it."
        return "provider_auth", f"The model '{name}' needs an API key: set {variable}."

    # mapping ---------------------------------------------------------------------

    def build_messages(self, request: ModelRequest) -> list[pai.ModelMessage]:
        """Our conversation as pydantic-ai messages: runs of system, user and tool
        messages become one ``ModelRequest``, each assistant message a ``ModelResponse``."""
        from pydantic_ai import messages as pai

        history: list[pai.ModelMessage] = []
        parts: list[pai.ModelRequestPart] = []
        if request.system_prompt:
            parts.append(pai.SystemPromptPart(request.system_prompt))
        for message in request.messages:
            if message.role == "assistant":
                response = _response(message)
                if response is None:
                    continue
                if parts:
                    history.append(pai.ModelRequest(parts=parts))
                    parts = []
                history.append(response)
            elif message.role == "tool":
                parts.extend(_tool_return(r) for r in message.tool_results)
            elif message.role == "system":
                parts.append(pai.SystemPromptPart(message.text))
            else:
                parts.append(pai.UserPromptPart(message.text))
        if parts:
            history.append(pai.ModelRequest(parts=parts))
        return history

    def build_parameters(self, request: ModelRequest) -> ModelRequestParameters:
        """The tools (backend and frontend alike: the loop decides who runs them)."""
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.tools import ToolDefinition

        tools = [
            ToolDefinition(
                name=t.name,
                description=t.description or None,
                parameters_json_schema=t.parameters,
            )
            for t in request.tools
        ]
        return ModelRequestParameters(function_tools=tools, allow_text_output=True)

    # streaming -------------------------------------------------------------------

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        if request.stop_signal is not None and request.stop_signal.is_set():
            raise self._error("call was cancelled: the run is stopping")
        scope = _CancelScope()
        unregister = request.stop_signal.on_stop(scope.cancel) if request.stop_signal else _nothing
        streamed = False  # a connection error after the first delta broke the stream off
        try:
            for delta in self._stream(request, scope):
                streamed = True
                yield delta
        except ProviderError:
            raise
        except (Exception, asyncio.CancelledError) as exc:
            if scope.cancelled:
                raise self._error("call was cancelled: the run is stopping") from exc
            raise self._failure(exc, streamed=streamed) from exc
        finally:
            unregister()

    def _stream(self, request: ModelRequest, scope: _CancelScope) -> Iterator[ModelDelta]:
        from pydantic_ai import messages as pai
        from pydantic_ai.direct import StreamedResponseSync, model_request_stream

        model = self.model()
        messages = self.build_messages(request)
        parameters = self.build_parameters(request)
        # model_request_stream_sync, with the async stream watched so that another
        # thread can cancel the tasks blocked in it (StreamedResponseSync is what
        # model_request_stream_sync returns around model_request_stream).
        opened = model_request_stream(
            model,
            messages,
            model_settings=self.model_settings,
            model_request_parameters=parameters,
        )
        calls: dict[int, _CallState] = {}
        watched: Any = _Watched(opened, scope)  # proxies the StreamedResponse it yields
        with StreamedResponseSync(watched) as response:
            for event in response:
                if scope.cancelled:
                    raise asyncio.CancelledError
                if isinstance(event, pai.PartDeltaEvent):
                    delta = event.delta
                    if isinstance(delta, pai.TextPartDelta):
                        if delta.content_delta:
                            yield TextDelta(delta.content_delta)
                    elif isinstance(delta, pai.ThinkingPartDelta):
                        if delta.content_delta:
                            yield ReasoningDelta(delta.content_delta)
                    elif isinstance(delta, pai.ToolCallPartDelta):
                        state = calls.get(event.index)
                        if state is not None:
                            piece = state.fragment(delta.args_delta)
                            if piece:
                                yield ToolCallDelta(event.index, arguments=piece)
                elif isinstance(event, pai.PartStartEvent):
                    part = event.part
                    if isinstance(part, pai.TextPart):
                        if part.content:
                            yield TextDelta(part.content)
                    elif isinstance(part, pai.ThinkingPart):
                        if part.content:
                            yield ReasoningDelta(part.content)
                    elif isinstance(part, pai.ToolCallPart):
                        state = calls[event.index] = _CallState()
                        yield ToolCallDelta(
                            event.index,
                            id=part.tool_call_id,
                            name=part.tool_name,
                            arguments=state.fragment(part.args),
                        )
                elif isinstance(event, pai.PartEndEvent) and isinstance(
                    event.part, pai.ToolCallPart
                ):
                    state = calls.get(event.index)
                    if state is not None and not state.streamed:
                        # arguments that came as objects (or not at all): sent once, whole
                        state.streamed = True
                        yield ToolCallDelta(event.index, arguments=event.part.args_as_json_str())
            final = response.response
            usage = response.usage
        if _ended_early(model, final):
            raise self._error(
                "got a stream that ended before the response was complete (no finish "
                "reason): the connection was probably cut.",
                advice=PROVIDER_BROKE_OFF,
            )
        yield Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        replay = _replay_state(final)
        if replay:
            yield MetaDelta(REPLAY_KEY, replay)

    # errors ----------------------------------------------------------------------

    def _failure(self, exc: BaseException, *, streamed: bool = False) -> ProviderError:
        try:
            from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
        except ImportError:  # pragma: no cover - the model could not have been built
            return self._error(f"failed: {_describe(exc)}")
        if isinstance(exc, ModelHTTPError):
            hint = _STATUS_HINTS.get(exc.status_code, "")
            where = " mid-stream" if getattr(exc, "in_stream", False) else ""
            detail = _excerpt(_body_text(exc.body)) or _describe(exc)
            text = f"answered HTTP {exc.status_code}{where}{hint}: {detail}"
            reason, advice = self._status_advice(exc.status_code, detail)
            return self._error(text, reason=reason, advice=advice)
        if isinstance(exc, UnexpectedModelBehavior):
            return self._error(f"got an unexpected response: {_excerpt(exc.message)}")
        chain = _chain(exc)
        kinds = {cls.__name__ for error in chain for cls in type(error).__mro__}
        if kinds & _TIMEOUTS:
            advice = f"The model provider for '{self.name}' did not answer in time: try again."
            return self._error(f"failed: {_describe(exc)}", reason="timeout", advice=advice)
        if kinds & _CONNECTION_ERRORS and streamed:
            return self._error(f"broke off the stream: {_describe(exc)}", advice=PROVIDER_BROKE_OFF)
        if kinds & _CONNECTION_ERRORS:
            base_url = getattr(self._model, "base_url", None)
            # The SDKs say only "Connection error."; a connection of our own says why, or
            # that the server is there (then the call failed some other way).
            cause = unreachable(base_url) if isinstance(base_url, str) and base_url else None
            if cause is not None:
                advice = self._unreachable_advice(str(base_url), cause)
                return self._error(
                    f"failed: {_describe(exc)}", reason="provider_unreachable", advice=advice
                )
        return self._error(f"failed: {_describe(exc)}")

    def _status_advice(self, status: int, detail: str) -> tuple[FailureCode | None, str | None]:
        """The code and advice of a call the provider refused with HTTP ``status``."""
        if status in (401, 403):
            key = _KEY_VARIABLES.get(self._prefix(), "the provider's API key variable")
            return "provider_auth", (
                f"The model provider refused the API key for '{self.name}' (HTTP {status}): "
                f"set {key} to a valid key."
            )
        if status == 404 and "model" in detail.lower():
            return "model_not_found", (
                f"The model provider does not serve the model '{self.name}' (HTTP 404): set "
                f"{self._model_name} to a model it serves."
            )
        if status == 429:
            return "provider_rate_limited", (
                "The model provider refused the call for its rate or quota limits (HTTP "
                f"429): try again later, or raise the account's limits. It said: {detail}"
            )
        if status >= 500:
            return None, f"The model provider failed (HTTP {status}): try again in a moment."
        return None, None

    def _unreachable_advice(self, base_url: str, cause: str) -> str:
        variable = _URL_VARIABLES.get(self._prefix(), "the provider's base URL")
        return (
            f"The model provider for '{self.name}' at {base_url.rstrip('/')} cannot be "
            f"reached ({cause}): "
            f"start it, or set {variable} to where it listens."
        )

    def _prefix(self) -> str:
        """The provider part of the model's name (``openai`` of ``openai-chat:...``)."""
        prefix = self.name.partition(":")[0]
        return "openai" if prefix.startswith("openai") else prefix

    def _error(
        self, text: str, *, reason: FailureCode | None = None, advice: str | None = None
    ) -> ProviderError:
        message = self._redact(f"pydantic-ai provider ({self.name}) {text}")
        advice = self._redact(advice) if advice is not None else None
        return ProviderError(message, reason=reason, advice=advice)

    def _redact(self, text: str) -> str:
        return redact_keys(text, (*self._secrets, *_model_keys(self._model)))


class _CallState:
    """One streamed tool call: whether argument text went out, and whether its
    arguments arrive as objects (then they are sent whole at the part's end)."""

    __slots__ = ("objects", "streamed")

    def __init__(self) -> None:
        self.streamed = False
        self.objects = False

    def fragment(self, args: object) -> str:
        if args is not None and not isinstance(args, str):
            self.objects = True  # a dict (or a typed args object): sent whole at the end
            return ""
        if not args or self.objects:
            return ""
        self.streamed = True
        return args


#: the models whose streams record the provider's own finish reason in provider_details,
#: so that a stream closed before it came is known to be cut short (the SDKs end such a
#: stream silently)
_RECORDS_FINISH = ("OpenAIChatModel", "AnthropicModel")


def _ended_early(model: Model, response: pai.ModelResponse) -> bool:
    if not any(cls.__name__ in _RECORDS_FINISH for cls in type(model).__mro__):
        return False
    if response.finish_reason == "content_filter":  # a refusal records no raw reason
        return False
    return "finish_reason" not in (response.provider_details or {})


def _response(message: Message) -> pai.ModelResponse | None:
    from pydantic_ai import messages as pai

    replay = message.meta.get(REPLAY_KEY)
    replay = replay if isinstance(replay, dict) else {}
    parts: list[pai.ModelResponsePart] = []
    for thought in replay.get("thinking") or ():
        parts.append(
            pai.ThinkingPart(
                thought.get("content") or "",
                id=thought.get("id"),
                signature=thought.get("signature"),
                provider_name=thought.get("provider"),
                provider_details=thought.get("details"),
            )
        )
    if message.text:
        parts.append(pai.TextPart(message.text))
    details = replay.get("calls") or {}
    for call in message.tool_calls:
        extra = details.get(call.id) or {}
        parts.append(
            pai.ToolCallPart(
                call.name,
                dict(call.inputs),
                call.id,
                id=extra.get("id"),
                provider_name=extra.get("provider"),
                provider_details=extra.get("details"),
            )
        )
    if not parts:
        return None
    return pai.ModelResponse(parts=parts, provider_name=replay.get("provider"))


def _tool_return(result: Any) -> pai.ToolReturnPart:
    from pydantic_ai import messages as pai

    outcome: Literal["denied", "failed", "success"] = (
        "denied" if result.rejected else "failed" if result.is_error else "success"
    )
    return pai.ToolReturnPart(result.name, result.content, result.call_id, outcome=outcome)


def _replay_state(response: pai.ModelResponse) -> dict[str, Any]:
    """What of the response must go back to the model as it was: signed thinking
    and provider details of calls (JSON only; anything else is dropped)."""
    from pydantic_ai import messages as pai

    thinking: list[dict[str, Any]] = []
    calls: dict[str, Any] = {}
    for part in response.parts:
        if isinstance(part, pai.ThinkingPart) and (part.signature or part.provider_details):
            thinking.append(
                _json_only(
                    {
                        "content": part.content,
                        "id": part.id,
                        "signature": part.signature,
                        "provider": part.provider_name,
                        "details": part.provider_details,
                    }
                )
            )
        elif isinstance(part, pai.ToolCallPart) and part.provider_details:
            calls[part.tool_call_id] = _json_only(
                {"id": part.id, "provider": part.provider_name, "details": part.provider_details}
            )
    state: dict[str, Any] = {}
    if (thinking or calls) and response.provider_name:
        state["provider"] = response.provider_name
    if thinking:
        state["thinking"] = thinking
    if calls:
        state["calls"] = calls
    return state


def _json_only(values: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        try:
            jsonutil.dumps(value)
        except (TypeError, ValueError):
            continue
        kept[key] = value
    return kept


class _CancelScope:
    """The asyncio tasks blocked in one model call, cancellable from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.cancelled = False

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            if self.cancelled:
                raise asyncio.CancelledError
            self._tasks.add(task)
            self._loop = task.get_loop()
        try:
            yield
        finally:
            with self._lock:
                self._tasks.discard(task)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            tasks, loop = list(self._tasks), self._loop
        if loop is not None and tasks:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(_cancel_tasks, tasks)


def _cancel_tasks(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()


class _Watched:
    """pydantic-ai's async stream context manager, with the task opening it (the
    request until the response's headers) and the one reading it in ``scope``."""

    def __init__(self, opened: Any, scope: _CancelScope) -> None:
        self._opened = opened
        self._scope = scope

    async def __aenter__(self) -> _WatchedStream:
        with self._scope.watching():
            stream = await self._opened.__aenter__()
        return _WatchedStream(stream, self._scope)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._opened.__aexit__(exc_type, exc, tb)  # type: ignore[no-any-return]


class _WatchedStream:
    """A ``StreamedResponse`` whose iteration is watched; everything else passes through."""

    def __init__(self, stream: StreamedResponse, scope: _CancelScope) -> None:
        self._stream = stream
        self._scope = scope

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aiter__(self) -> AsyncIterator[pai.ModelResponseStreamEvent]:
        with self._scope.watching():
            async for event in self._stream:
                yield event


def _nothing() -> None:
    return None


#: exception classes (by name, in the chain of causes) of a model call that found
#: nobody at the base URL, or nobody answering in time: pydantic-ai's categories, and
#: the SDKs' and httpx's own for releases without them
_CONNECTION_ERRORS = frozenset({"ModelConnectionError", "APIConnectionError", "ConnectError"})
_TIMEOUTS = frozenset({"ModelTimeoutError", "APITimeoutError", "ConnectTimeout", "ReadTimeout"})


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _model_keys(model: Model | None) -> list[str]:
    """The API key a model's SDK client holds, if it exposes one."""
    client = getattr(model, "client", None)
    key = getattr(client, "api_key", None)
    return [key] if isinstance(key, str) and len(key) >= 4 else []


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError):
        return "the call was cancelled"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {_excerpt(text)}"


def _body_text(body: object) -> str:
    if body is None:
        return ""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str | bytes):
        return body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        return jsonutil.dumps(body)
    except (TypeError, ValueError):
        return str(body)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "…"
