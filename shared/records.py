"""The JSON shapes a durable run record holds, one TypedDict each, so that a misspelled
key fails the type check instead of a run in production.

``start``: what the turn began with. ``checkpoint``: the loop's position (model calls
made, the open tool batch, the interrupt counter, who executes). ``accepted``: decisions
and results by call id. ``interrupt``: the public JSON of what a suspended run waits on
(``relayline.shared.interrupts``)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from relayline.shared.failures import StoredFailure
from relayline.shared.interrupts import Decision, ResultEntry
from relayline.shared.jsonutil import JSONObject
from relayline.shared.tools import FrontendToolJSON

RunStatus = Literal["running", "suspended", "completed", "failed", "cancelled"]
#: the statuses that hold a thread: no new turn starts while its run is in one of them
ACTIVE_STATUSES: tuple[RunStatus, ...] = ("running", "suspended")


class RunStart(TypedDict):
    """What a turn began with: the user message's id and the client's tool catalog."""

    message: str
    frontendTools: list[FrontendToolJSON]


class CallJSON(TypedDict):
    """One tool call of a batch as the model made it, with its tool's policy."""

    id: str
    name: str
    inputs: JSONObject
    description: str | None
    deferred: bool
    approval: bool
    redact: list[str]


class BatchJSON(TypedDict):
    """The open tool batch: the assistant message proposing the calls, the id its
    tool message will have, the calls, and the deadline of a frontend wait."""

    messageId: str
    resultMessageId: str
    calls: list[CallJSON]
    waitExpiresAt: NotRequired[str | None]


class Accepted(TypedDict, total=False):
    """What a run accepted so far, by call id (ResultEntry and Decision re-exported
    from ``relayline.shared.interrupts``, where the answers are checked)."""

    decisions: dict[str, Decision]
    results: dict[str, ResultEntry]


class UsageJSON(TypedDict):
    """Tokens of a run's model calls, summed (``Checkpoint.usage``)."""

    input: int
    output: int


class Checkpoint(TypedDict, total=False):
    modelCalls: int
    batch: BatchJSON | None
    interruptSeq: int
    stopAfterBatch: bool
    #: the Celery task executing the run: its own redelivery may take it over at once
    executor: str
    #: the backend call executing now (set before it runs, cleared with its result): a
    #: recovery that finds it set knows the call was interrupted mid-way
    toolStarted: str | None
    #: input and output tokens of every model call of the run, summed (absent until a
    #: provider reports usage)
    usage: UsageJSON
    #: why the run failed (set with status ``failed``; ``runs.error`` is its message)
    failure: StoredFailure


__all__ = [
    "ACTIVE_STATUSES",
    "Accepted",
    "BatchJSON",
    "CallJSON",
    "Checkpoint",
    "Decision",
    "ResultEntry",
    "RunStart",
    "RunStatus",
    "UsageJSON",
]
