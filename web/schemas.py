"""What every route takes and answers, defined once: the request body models validate
requests (``parse_body``) and, with the response models and the operations below,
generate the OpenAPI description (web.openapi). Models are pydantic v2 (already there
through ag-ui-protocol, now a direct dependency): one definition both validates and
yields JSON Schema.

Bodies are lenient where the protocols are (unknown keys are kept, AG-UI and Vercel
messages are objects the translators read); the sizes and nesting of web.bounds are
checked before the model, with their own messages."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from relayline.shared.errors import InputTranslationError
from relayline.shared.ids import SEGMENT_ID_PATTERN, THREAD_ID_PATTERN
from relayline.web.bounds import MAX_ID_CHARS, json_body

#: Pusher's socket id format; ASCII digits only (``\d`` would take other scripts' digits)
SOCKET_ID_PATTERN = r"[0-9]{1,20}\.[0-9]{1,20}"
#: a channel this server authorizes (the thread id is checked as everywhere)
PUSHER_CHANNEL_PATTERN = r"^private-(?:encrypted-)?thread-(.+)$"


#: a native stream cursor (web.cursor): "<stream id>:<sequence>" or a bare sequence
CURSOR_PATTERN = f"^({SEGMENT_ID_PATTERN}:)?(-1|0|[1-9][0-9]{{0,17}})$"


#: a thread id as documented; web.auth.check_thread_id checks it (with its own message)
THREAD_ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": f"^{THREAD_ID_PATTERN}$"}


class Body(BaseModel):
    """A request body: unknown keys are kept (the protocols add fields over time)."""

    model_config = ConfigDict(extra="allow")
    #: the refusal for a field the model refuses, by field name (else pydantic's text)
    refusals: ClassVar[dict[str, str]] = {}


M = TypeVar("M", bound=BaseModel)


def parse_body(model: type[M], raw: object | None = None) -> M:
    """``raw`` (default: the request's JSON object, web.bounds.json_body) validated by
    ``model``; a 400 naming the first field it refuses otherwise."""
    if raw is None:
        raw = json_body()
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        refusals: dict[str, str] = getattr(model, "refusals", {})
        message = refusals.get(field) or f"'{field}': {first['msg']}."
        raise InputTranslationError(message) from None


# -- request bodies ---------------------------------------------------------------------


class NativeMessageBody(Body):
    """``POST /api/threads/<id>/messages``."""

    content: str = Field(min_length=1, description="the user's message; not blank")
    refusals: ClassVar[dict[str, str]] = {"content": "The body needs a non-empty string 'content'."}


class AnswersBody(RootModel[dict[str, Any]]):
    """Native tool results or approval decisions: tool call id -> answer."""


class RunAgentInputBody(Body):
    """An AG-UI ``RunAgentInput`` (new turn or continuation, told apart by shape)."""

    threadId: str = Field(json_schema_extra=THREAD_ID_SCHEMA)
    runId: str | None = None
    messages: list[dict[str, Any]]
    state: Any = None
    tools: list[Any] | None = None
    context: list[Any] | None = None
    forwardedProps: Any = None
    resume: list[dict[str, Any]] | None = None
    refusals: ClassVar[dict[str, str]] = {"messages": "'messages' must be a list."}


class ConnectBody(Body):
    """AG-UI connect: a ``RunAgentInput`` of which only ``threadId`` is read."""

    threadId: str = Field(json_schema_extra=THREAD_ID_SCHEMA)


class ChatBody(Body):
    """A Vercel ``useChat`` request body."""

    id: str = Field(json_schema_extra=THREAD_ID_SCHEMA)
    messages: list[dict[str, Any]] = []
    trigger: Literal["submit-message"] = "submit-message"
    refusals: ClassVar[dict[str, str]] = {
        "messages": "'messages' must be a list.",
        "trigger": "Only trigger 'submit-message' is supported.",
    }


class ChatStopBody(Body):
    """``POST /api/chat/<id>/stop`` (the body may be empty)."""

    activeStreamId: str | None = Field(
        default=None, max_length=MAX_ID_CHARS, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$"
    )
    refusals: ClassVar[dict[str, str]] = {
        "activeStreamId": (
            f"'activeStreamId' must be a string of at most {MAX_ID_CHARS} characters, "
            "without control characters."
        )
    }


class PusherAuthForm(BaseModel):
    """``POST /pusher/auth`` (form-encoded, as pusher-js sends it)."""

    socket_id: str = Field(pattern=f"^{SOCKET_ID_PATTERN}$")
    channel_name: str = Field(pattern=PUSHER_CHANNEL_PATTERN)


# -- responses ----------------------------------------------------------------------------


class Reply(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(Reply):
    """Every refusal before the headers (web.errors); a refusal a client acts on by
    its reason also has ``code`` (a continuation that lost: ``runId`` and ``status``)."""

    error: str
    type: str
    code: str | None = None
    runId: str | None = None
    status: str | None = None


class CopilotKitNotFound(Reply):
    """CopilotKit's runtime answer for an unknown agent on its stop route."""

    error: str


class Health(Reply):
    status: Literal["ok"]


class Queue(Reply):
    depth: int | None
    limit: int | None
    perOwnerLimit: int | None


class ModelProblemReply(Reply):
    agent: str
    code: str
    message: str


class ModelCheck(Reply):
    """The model preflight (relayline.shared.preflight): what would fail every turn."""

    status: Literal["ok", "warning"]
    problems: list[ModelProblemReply]


class LiveWorkers(Reply):
    """The workers whose presence beat is fresh (channels.runs.workers); both null
    while Redis cannot be read."""

    count: int | None
    names: list[str] | None


class Readiness(Reply):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str]
    queue: Queue
    workers: LiveWorkers
    model: ModelCheck


class AgentConfig(Reply):
    tools: list[dict[str, Any]]
    suggestions: list[dict[str, Any]]
    config: dict[str, Any]


class AguiThread(Reply):
    messages: list[dict[str, Any]]
    interrupts: list[dict[str, Any]]
    status: str | None
    before: str | None
    stopped: list[str]


class ChatMessages(Reply):
    messages: list[dict[str, Any]]


class RunError(Reply):
    """Why a run failed: a stable code (relayline.shared.errors.FailureCode) and the
    message its thread's owner reads."""

    code: str
    message: str


class NativeRun(Reply):
    runId: str
    status: str
    attempt: int
    interrupt: dict[str, Any] | None
    usage: dict[str, Any] | None
    error: RunError | None


class NativeThread(Reply):
    threadId: str
    run: NativeRun | None


class CancelReply(Reply):
    threadId: str
    stopped: bool
    runId: str | None
    status: str | None


class ChatStopReply(Reply):
    success: bool
    stopped: bool
    #: when not stopped: the status the thread's run stands at (None: no run)
    status: str | None = None


class AgentStopReply(Reply):
    """CopilotKit's runtime answer: ``{stopped, interrupt}`` or ``{stopped, message}``
    (with ``status`` when not stopped)."""

    stopped: bool
    interrupt: dict[str, Any] | None = None
    message: str | None = None
    status: str | None = None


class ThreadLine(Reply):
    threadId: str
    title: str | None
    updated: str
    status: str | None


class ThreadList(Reply):
    threads: list[ThreadLine]
    cursor: str | None


class Envelopes(Reply):
    """A segment's raw envelopes after a cursor (web.segments)."""

    envelopes: list[dict[str, Any]]
    ended: bool


class PushAccepted(Reply):
    """202 of a pushed turn: where to listen (Pusher or Mercure fields)."""

    threadId: str
    delivery: Literal["pusher", "mercure"]
    runId: str
    streamId: str = Field(pattern=f"^{SEGMENT_ID_PATTERN}$")
    queued: int | None = None


class PusherAuth(Reply):
    auth: str


class MercureToken(Reply):
    token: str
    hubUrl: str
    topic: str


class OutcomeTextsReply(Reply):
    """The person's words for decided and unfinished calls (shared.texts.OUTCOME_TEXTS)."""

    approved: str
    rejected: str
    rejectedBecause: str
    stopped: str
    interrupted: str


class DemoConfig(Reply):
    delivery: str
    threadIdPattern: str
    #: the API wants a bearer token: the page asks the person for one
    tokenRequired: bool
    outcomeTexts: OutcomeTextsReply


# -- operations ---------------------------------------------------------------------------

Media = Literal[
    "application/json", "text/event-stream", "text/html", "text/plain", "application/octet-stream"
]
#: SSE vocabularies, by component name (web.openapi builds their schemas)
Events = Literal["NativeEvent", "AGUIEvent", "VercelChunk"]


@dataclasses.dataclass(frozen=True)
class Answer:
    description: str
    model: type[BaseModel] | None = None
    media: Media = "application/json"
    events: Events | None = None
    headers: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    where: Literal["query", "header"]
    schema: dict[str, Any]
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Operation:
    summary: str
    answers: dict[int, Answer]
    body: type[BaseModel] | None = None
    body_required: bool = True
    form: bool = False
    params: tuple[Param, ...] = ()
    #: path parameter schemas by name (default: a thread id)
    path: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def media(self) -> str:
        """The one Content-Type the route's body may have (web.cross_site)."""
        return "application/x-www-form-urlencoded" if self.form else "application/json"


DELIVERY = Param(
    "delivery",
    "query",
    {"type": "string", "enum": ["relay", "pusher", "mercure"]},
    "relay (the SSE answer) or push (202 with where to listen)",
)
MULTITASK = Param(
    "multitask",
    "query",
    {"type": "string", "enum": ["reject", "interrupt", "enqueue"]},
    "what a message does while a run holds the thread",
)
ON_DISCONNECT = Param(
    "onDisconnect",
    "query",
    {"type": "string", "enum": ["continue", "cancel"]},
    "whether a dropped relay stops the run (default: the agent's AgentSpec.on_disconnect)",
)
TURN_PARAMS = (DELIVERY, MULTITASK, ON_DISCONNECT)
CONTINUE_PARAMS = (DELIVERY, ON_DISCONNECT)

_ERRORS = {
    400: "bad input",
    401: "nobody is signed in, or the token is refused",
    403: "a page of a foreign origin, with cookie sign-in (ForeignOrigin)",
    404: "unknown or foreign thread, agent or route",
    409: "a conflict: a stale run, a settled call, a run holding the thread, a continuation "
    "that lost (RunNotWaitingError: code, runId, status)",
    413: "a body over 1 MiB",
    415: "a body of another Content-Type than the route's",
    429: "too many turns queued",
    503: "a dependency (database, Redis, broker) is down; retry after `Retry-After` seconds "
    "(the database's: code database_unavailable)",
}
#: headers a refusal carries
_HEADERS = {503: ("Retry-After",)}


def errors(*statuses: int) -> dict[int, Answer]:
    """The refusals a route may answer (every one is ``ErrorBody``)."""
    return {
        status: Answer(_ERRORS[status], ErrorBody, headers=_HEADERS.get(status, ()))
        for status in statuses
    }


#: what every relayline route may answer besides its own
COMMON = errors(401, 503)
READ = {**COMMON, **errors(400, 404)}
#: what a route that changes state may answer besides (web.cross_site: 403, 415)
CHANGE = {**READ, **errors(403, 415)}
WRITE = {**CHANGE, **errors(409, 413)}
TURN = {**WRITE, **errors(429)}


def streamed(events: Events) -> dict[int, Answer]:
    return {
        200: Answer(
            "the run's SSE stream",
            media="text/event-stream",
            events=events,
            headers=("X-Relayline-Stream-Id",),
        ),
        202: Answer("pushed: where to listen", PushAccepted),
    }


OPERATIONS: dict[str, Operation] = {
    "health.healthz": Operation("liveness", {200: Answer("alive", Health)}),
    "health.readyz": Operation(
        "readiness of database, Redis and broker, and the queue",
        {200: Answer("ready", Readiness), 503: Answer("not ready", Readiness)},
    ),
    "metrics.metrics": Operation(
        "Prometheus metrics (RELAYLINE_METRICS=1)",
        {200: Answer("the samples", media="text/plain"), **errors(404)},
    ),
    "agui.post_agui": Operation(
        "AG-UI run of the default agent",
        {**streamed("AGUIEvent"), **TURN},
        RunAgentInputBody,
        params=TURN_PARAMS,
    ),
    "agui.post_agent": Operation(
        "AG-UI run of an agent",
        {**streamed("AGUIEvent"), **TURN},
        RunAgentInputBody,
        params=TURN_PARAMS,
        path={"agent_id": {"type": "string"}},
    ),
    "agui.get_agent": Operation(
        "an agent's tools and suggestions",
        {200: Answer("the configuration", AgentConfig), **COMMON, **errors(404)},
        path={"agent_id": {"type": "string"}},
    ),
    "agui.get_thread": Operation(
        "reload an AG-UI thread",
        {200: Answer("a page of history", AguiThread), **READ},
        params=(
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
            Param("before", "query", {"type": "string"}, "a stored message id to page back from"),
        ),
    ),
    "connect.connect_default": Operation(
        "AG-UI connect (default agent)",
        {
            200: Answer(
                "snapshot, then the live segment", media="text/event-stream", events="AGUIEvent"
            ),
            **WRITE,
        },
        ConnectBody,
    ),
    "connect.connect": Operation(
        "AG-UI connect",
        {
            200: Answer(
                "snapshot, then the live segment", media="text/event-stream", events="AGUIEvent"
            ),
            **WRITE,
        },
        ConnectBody,
        path={"agent_id": {"type": "string"}},
    ),
    "vercel.post_chat": Operation(
        "Vercel useChat turn", {**streamed("VercelChunk"), **TURN}, ChatBody, params=TURN_PARAMS
    ),
    "vercel.get_chat": Operation(
        "a chat's UI messages", {200: Answer("the messages", ChatMessages), **READ}
    ),
    "vercel.resume_chat": Operation(
        "resume a chat's active stream",
        {
            200: Answer(
                "the segment, replayed then live", media="text/event-stream", events="VercelChunk"
            ),
            204: Answer("nothing active"),
            **READ,
        },
    ),
    "native.post_message": Operation(
        "native turn", {**streamed("NativeEvent"), **TURN}, NativeMessageBody, params=TURN_PARAMS
    ),
    "native.post_tool_results": Operation(
        "answer frontend tool calls",
        {**streamed("NativeEvent"), **TURN},
        AnswersBody,
        params=CONTINUE_PARAMS,
    ),
    "native.post_approvals": Operation(
        "decide approvals",
        {**streamed("NativeEvent"), **TURN},
        AnswersBody,
        params=CONTINUE_PARAMS,
    ),
    "native.get_thread": Operation(
        "a thread's current run", {200: Answer("the thread", NativeThread), **READ}
    ),
    "native.resume_stream": Operation(
        "the thread's newest segment after a cursor, then live",
        {
            200: Answer("the segment", media="text/event-stream", events="NativeEvent"),
            204: Answer("nothing more"),
            410: Answer("the cursor is older than what is kept", ErrorBody),
            **READ,
        },
        params=(
            Param(
                "after",
                "query",
                {"type": "string", "pattern": CURSOR_PATTERN},
                "a cursor: '<stream id>:<sequence>' (a frame's id) or a bare sequence",
            ),
            Param("Last-Event-ID", "header", {"type": "string", "pattern": CURSOR_PATTERN}),
        ),
    ),
    "segments.envelopes": Operation(
        "a segment's envelopes after a cursor (push gap fill)",
        {
            200: Answer("the envelopes the log keeps", Envelopes),
            410: Answer("the log cannot continue from the cursor", ErrorBody),
            **READ,
        },
        params=(Param("after", "query", {"type": "integer", "minimum": -1}, "a sequence number"),),
        path={"segment_id": {"type": "string", "pattern": f"^{SEGMENT_ID_PATTERN}$"}},
    ),
    "stop.cancel_native": Operation(
        "stop a thread's run", {200: Answer("the outcome", CancelReply), **WRITE}
    ),
    "stop.stop_chat": Operation(
        "stop for useChat",
        {200: Answer("the outcome", ChatStopReply), **WRITE},
        ChatStopBody,
        body_required=False,
    ),
    "stop.stop_agui": Operation(
        "stop (CopilotKit, default agent)", {200: Answer("the outcome", AgentStopReply), **WRITE}
    ),
    "stop.stop_agent": Operation(
        "stop (CopilotKit)",
        {
            200: Answer("the outcome", AgentStopReply),
            **WRITE,
            404: Answer("unknown agent (CopilotKit's shape) or thread", CopilotKitNotFound),
        },
        path={"agent_id": {"type": "string"}, "thread_id": THREAD_ID_SCHEMA},
    ),
    "threads.list_threads": Operation(
        "the caller's threads, newest first",
        {200: Answer("a page", ThreadList), **COMMON, **errors(400)},
        params=(
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100}),
            Param("cursor", "query", {"type": "string"}, "the cursor of the previous page"),
        ),
    ),
    "threads.delete_thread": Operation("erase a thread", {204: Answer("erased"), **CHANGE}),
    "push.pusher_auth": Operation(
        "Pusher channel auth for the thread's owner",
        {200: Answer("the signature", PusherAuth), **WRITE},
        PusherAuthForm,
        form=True,
    ),
    "push.mercure_token": Operation(
        "a Mercure subscriber token for one thread",
        {200: Answer("the token", MercureToken), **READ},
        params=(Param("threadId", "query", THREAD_ID_SCHEMA),),
    ),
    "demo.page": Operation("the demo page", {200: Answer("HTML", media="text/html"), **COMMON}),
    "demo.config": Operation(
        "what the demo page needs: the push deliveries this server offers, whether it "
        "wants a bearer token, the words for call outcomes",
        {200: Answer("config", DemoConfig), **COMMON},
    ),
    "demo.static": Operation(
        "the demo page's files",
        {200: Answer("a file", media="application/octet-stream"), **COMMON, **errors(404)},
        path={"filename": {"type": "string"}},
    ),
    "api_docs.show": Operation(
        "the interactive viewer of this description (Swagger UI) and its files",
        {200: Answer("the page or a file", media="text/html"), **COMMON, **errors(404)},
        path={"path": {"type": "string"}},
    ),
    "openapi.document": Operation(
        "this description (OpenAPI 3.1)", {200: Answer("the document", media="application/json")}
    ),
}
