"""Texts a user or a client developer reads, each defined once (errors and answers).

Texts that describe an id rule live with the rule, in ``relayline.shared.ids``."""

from __future__ import annotations

from typing import Final, Protocol, TypedDict


class RunRef(Protocol):
    """What a text says of a run (a persistence RunRecord)."""

    @property
    def run_id(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def status(self) -> str: ...


#: what any failure shows: never the exception's own message, which may leak internals
RUN_FAILED: Final = "The run failed."
#: a model provider's failure relayline cannot say more of: the provider's own text
#: (hosts, ports, SDK internals) goes to the operator's log only
PROVIDER_FAILED: Final = "The model provider failed to answer: try again in a moment."
#: a model provider's answer that ended before it was complete
PROVIDER_BROKE_OFF: Final = (
    "The model provider's answer broke off before it was complete: try again."
)
#: a continuation whose payload answers nothing the run waits for
NO_MATCH: Final = "The payload contains no matching continuation input."
#: a new turn without text
EMPTY_TURN: Final = "A new turn needs a non-empty user message."
#: a request refused because the database cannot be reached (HTTP 503)
DATABASE_UNAVAILABLE: Final = "The database is unavailable; retry shortly."
#: the outcome of a call the run never finished because a person stopped it
CALL_STOPPED: Final = "TOOL NOT COMPLETED: the user stopped the run before this call finished."


class OutcomeTexts(TypedDict):
    """What a person reads about a call that did not run to its end. The model reads
    other words for the same outcomes (``batch.rejection_text``, ``CALL_STOPPED``), which
    are instructions to it, not explanations to a person."""

    approved: str
    rejected: str
    #: before a reason the person typed
    rejectedBecause: str
    stopped: str
    interrupted: str


#: the demo page's words for decided and unfinished calls (``GET /demo/config``)
OUTCOME_TEXTS: Final[OutcomeTexts] = {
    "approved": "Approved",
    "rejected": "Rejected: not run",
    "rejectedBecause": "Rejected: not run. Your reason:",
    "stopped": "Stopped: you stopped the answer before this ran to its end",
    "interrupted": "Not finished: the answer ended before this call did",
}


def thread_not_found(thread_id: str) -> str:
    """Also the answer for someone else's thread, which must look the same."""
    return f"Thread '{thread_id}' was not found."


def thread_id_required(field: str) -> str:
    """A body without its thread id (``field``: AG-UI ``threadId``, Vercel ``id``)."""
    return f"{field} is required: the id of the conversation's thread."


def thread_busy(thread_id: str, run: RunRef) -> str:
    """A new turn refused while a run holds its thread: what to do instead."""
    waiting = "waits for an answer" if run.status == "suspended" else "is running"
    first = "answer it" if run.status == "suspended" else "wait for it to end"
    return (
        f"Thread '{thread_id}' is busy: run '{run.run_id}' (attempt {run.attempt}) "
        f"{waiting}. To send this turn anyway, queue it after that run with "
        f"?multitask=enqueue (AG-UI: forwardedProps.multitask), or stop that run with "
        f"?multitask=interrupt or POST /api/threads/{thread_id}/cancel; else {first} first."
    )


def delivery_not_configured(delivery: str) -> str:
    """``delivery`` is the name people read: "Pusher" or "Mercure"."""
    return f"{delivery} delivery is not configured on this server."


def stream_lost(thread_id: str) -> str:
    """A relayed stream whose transport broke while its run may go on."""
    return (
        f"The connection to the output of thread '{thread_id}' was lost; the run was not "
        "reported failed. Resume the thread's stream or reload it to follow the run."
    )


def run_recovered(thread_id: str) -> str:
    """A stream whose segment a newer one replaced: the run was recovered after its
    worker was lost and goes on in that segment."""
    return (
        f"The run of thread '{thread_id}' lost its worker and goes on in a new stream. "
        "Resume the thread's stream or reload it to follow the run."
    )


def no_worker(seconds: float) -> str:
    """A relayed turn no worker took in time (web.waiting): withdrawn, never run."""
    return (
        f"No worker took this turn within {seconds:g} s, so it was withdrawn and will not "
        "run. Start a worker (relayline worker) and send it again."
    )
