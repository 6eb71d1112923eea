"""The web-to-worker contract: task names, and the jobs they carry as JSON.

The web sends tasks by name (it never imports the worker), so the names live here,
imported by both sides. A job carries only what the store cannot know: who asks, which
run, the client's own seed (its run id and state, the messages it holds that the store
does not) and where the output goes. Everything else the worker reads from its store,
so a job's size does not grow with the thread.

Key names are the camelCase ones jobs have always had on the wire, so a job enqueued by
an older web process is still understood.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, Literal, NotRequired, Self, TypedDict, cast

from relayline.shared.ids import SEGMENT_ID
from relayline.shared.interrupts import Answers
from relayline.shared.tools import FrontendTool, FrontendToolJSON

RUN_TURN: Final = "relayline.run_turn"
CONTINUE_RUN: Final = "relayline.continue_run"
EXPIRE_WAIT: Final = "relayline.expire_wait"
RECOVER_RUN: Final = "relayline.recover_run"

ProtocolName = Literal["agui", "vercel", "native"]
PROTOCOL_NAMES: Final[tuple[ProtocolName, ...]] = ("agui", "vercel", "native")
TargetKind = Literal["relay", "pusher", "mercure", "none"]
TARGET_KINDS: Final[tuple[TargetKind, ...]] = ("relay", "pusher", "mercure", "none")

#: the owner of threads when authentication is off
ANONYMOUS: Final = "anonymous"
#: the agent id of RELAYLINE_AGENT
DEFAULT_AGENT: Final = "default"


class JobError(ValueError):
    """A job that does not follow this contract (a bug or a foreign producer)."""


class TargetJSON(TypedDict):
    kind: TargetKind
    channel: NotRequired[str]


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a segment's output goes besides its log: ``relay`` to the request that
    sent the job, which reads the segment's log (``channel`` is that request's relay id,
    a label for the logs, not a Redis key), ``pusher``/``mercure`` to the thread's push
    channel, ``none`` only to history."""

    kind: TargetKind
    channel: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise JobError(
                f"Unknown delivery target {self.kind!r}; expected one of {TARGET_KINDS}."
            )
        if (self.kind == "relay") != (self.channel is not None):
            raise JobError("A relay target, and only a relay target, names its channel.")

    def to_json(self) -> TargetJSON:
        if self.channel is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "channel": self.channel}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Target:
        channel = data.get("channel")
        return cls(kind=data.get("kind"), channel=channel)  # type: ignore[arg-type]


class ClientSeed(TypedDict, total=False):
    """What the client holds that the store does not, for the protocol's adapter.

    AG-UI: ``runId`` (the client's per-request id), ``state``, and ``messages``: the
    client's messages the store may not hold (the worker completes the snapshot from
    its store). Vercel: ``messageId`` and ``parts`` of the assistant message a
    continuation extends."""

    runId: str | None
    state: dict[str, Any]
    messages: list[dict[str, Any]]
    messageId: str | None
    parts: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class UserTurn:
    """The user message that starts a turn; ``id`` is always set (minted when the
    client sent none)."""

    id: str
    text: str


class _JobJSON(TypedDict):
    threadId: str
    agentId: str
    owner: str
    runId: str
    protocol: ProtocolName
    seed: ClientSeed
    target: NotRequired[TargetJSON]
    streamId: NotRequired[str]


class TurnJobJSON(_JobJSON):
    message: dict[str, str]
    frontendTools: list[FrontendToolJSON]


class ContinueJobJSON(_JobJSON):
    attempt: int
    answers: Answers
    stopAfterToolCall: bool


class AttemptJobJSON(_JobJSON):
    attempt: int


#: the JSON of a timer's and of a recovery's job
ExpireJobJSON = AttemptJobJSON
RecoverJobJSON = AttemptJobJSON


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """What every job names: the thread, the agent, who asks, the run, the protocol
    its output is encoded in, the client's seed and the delivery target (set by the
    delivery just before sending)."""

    thread_id: str
    agent_id: str = DEFAULT_AGENT
    owner: str = ANONYMOUS
    run_id: str
    protocol: ProtocolName
    seed: ClientSeed = dataclasses.field(default_factory=lambda: ClientSeed())
    target: Target | None = None
    #: the segment this job's output is (its envelopes' stream id and log), named by
    #: the web when it enqueues; None for jobs nobody announced (timers, recoveries)
    segment_id: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOL_NAMES:
            raise JobError(f"Unknown protocol {self.protocol!r}; expected one of {PROTOCOL_NAMES}.")
        if self.segment_id is not None and not SEGMENT_ID.match(self.segment_id):
            raise JobError(f"Invalid stream id {self.segment_id!r}: 32 lowercase hex digits.")

    def to(self, target: Target, segment_id: str | None = None) -> Self:
        """This job, delivered to ``target`` as the segment ``segment_id``."""
        return dataclasses.replace(self, target=target, segment_id=segment_id or self.segment_id)

    def _head(self) -> _JobJSON:
        head: _JobJSON = {
            "threadId": self.thread_id,
            "agentId": self.agent_id,
            "owner": self.owner,
            "runId": self.run_id,
            "protocol": self.protocol,
            "seed": self.seed,
        }
        if self.target is not None:
            head["target"] = self.target.to_json()
        if self.segment_id is not None:
            head["streamId"] = self.segment_id
        return head

    @staticmethod
    def head_fields(data: Mapping[str, Any]) -> dict[str, Any]:
        for key in ("threadId", "runId", "protocol"):
            if not isinstance(data.get(key), str):
                raise JobError(f"A job needs a string {key!r}.")
        target = data.get("target")
        return {
            "thread_id": data["threadId"],
            "agent_id": data.get("agentId", DEFAULT_AGENT),
            "owner": data.get("owner", ANONYMOUS),
            "run_id": data["runId"],
            "protocol": data["protocol"],
            "seed": cast(ClientSeed, dict(data.get("seed") or {})),
            "target": Target.from_json(target) if isinstance(target, Mapping) else None,
            "segment_id": segment_id
            if isinstance(segment_id := data.get("streamId"), str)
            else None,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnJob(Job):
    """Start a new turn with ``message`` and the client's frontend tool catalog."""

    message: UserTurn
    frontend_tools: tuple[FrontendTool, ...] = ()

    def to_json(self) -> TurnJobJSON:
        return {
            **self._head(),
            "message": {"id": self.message.id, "text": self.message.text},
            "frontendTools": [t.to_json() for t in self.frontend_tools],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnJob:
        message = data.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
            raise JobError("A turn job needs a message with an id and a text.")
        return cls(
            **cls.head_fields(data),
            message=UserTurn(message["id"], str(message.get("text", ""))),
            frontend_tools=tuple(FrontendTool.from_json(t) for t in data.get("frontendTools", ())),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContinueJob(Job):
    """Continue the suspended run ``run_id`` at ``attempt`` with the staged answers."""

    attempt: int
    answers: Answers
    stop_after_tool_call: bool = False

    def to_json(self) -> ContinueJobJSON:
        return {
            **self._head(),
            "attempt": self.attempt,
            "answers": self.answers,
            "stopAfterToolCall": self.stop_after_tool_call,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContinueJob:
        if not isinstance(data.get("attempt"), int) or not isinstance(data.get("answers"), dict):
            raise JobError("A continue job needs an integer attempt and an answers map.")
        return cls(
            **cls.head_fields(data),
            attempt=data["attempt"],
            answers=data["answers"],
            stop_after_tool_call=bool(data.get("stopAfterToolCall", False)),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class _AttemptJob(Job):
    """A job about the run ``run_id`` as it stood at ``attempt`` (nothing else)."""

    attempt: int

    def to_json(self) -> AttemptJobJSON:
        return {**self._head(), "attempt": self.attempt}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        if not isinstance(data.get("attempt"), int):
            raise JobError(f"{cls.__name__} needs an integer attempt.")
        return cls(**cls.head_fields(data), attempt=data["attempt"])


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExpireJob(_AttemptJob):
    """Settle the expired frontend wait of ``run_id`` at ``attempt`` (a timer)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecoverJob(_AttemptJob):
    """Continue the running run ``run_id`` from its last checkpoint at ``attempt``: its
    worker's heartbeat lapsed (the sweeper sends this job)."""


AnyJob = TurnJob | ContinueJob | ExpireJob | RecoverJob


def shown_kwargs(task: str, thread_id: str, run_id: str) -> str:
    """What Celery shows of a job's kwargs (``kwargsrepr``) instead of its repr: the repr
    costs a quarter of send_task's time and puts the person's text in every log."""
    return f"{{'job': <{task} thread={thread_id} run={run_id}>}}"
