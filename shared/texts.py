"""Texts a user or a client developer reads, each defined once (errors and answers).

Texts that describe an id rule live with the rule, in ``relayline.shared.ids``."""

from __future__ import annotations

from typing import Final, TypedDict

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
