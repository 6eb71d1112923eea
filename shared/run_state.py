"""Where a run stands after a segment: what ``Agent.run`` returns and what a channel's
terminal receives. Kept below the agent so the channel contract (``relayline.shared.delivery``)
names it without importing the agent package."""

from __future__ import annotations

import dataclasses

from relayline.shared.interrupts import InterruptRequest
from relayline.shared.records import RunStatus


@dataclasses.dataclass(frozen=True)
class RunState:
    """Where a run stands after a segment: ``completed``, ``suspended`` or ``failed``
    (``running`` only when inspected while another process executes it). A failed
    run's ``error`` is the message its thread's owner reads, ``error_code`` why it failed
    (``provider_auth``, ``tool_failed``, ...: relayline.shared.errors.FailureCode)."""

    thread_id: str
    run_id: str
    status: RunStatus
    attempt: int
    interrupt: InterruptRequest | None = None
    message: str | None = None
    error: str | None = None
    error_code: str | None = None
