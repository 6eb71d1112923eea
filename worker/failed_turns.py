"""A new turn that failed before its run could begin (its agent cannot be loaded) is
stored as a failed run: the person's message stays in the thread's history, and
``GET /api/threads/<id>`` says why the turn failed, as for any run that failed.

A continuation refused so leaves its run as it was: nothing of the answer was
accepted, and the same answer can be sent again once the agent loads.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from relayline.shared.errors import ConflictError, RunInFlightError
from relayline.shared.failures import RunFailure
from relayline.shared.jobs import TurnJob
from relayline.shared.messages import Message
from relayline.shared.persistence import Store
from relayline.shared.records import Checkpoint

logger = logging.getLogger("relayline.worker")


def record_failed_turn(store: Store, job: TurnJob, failure: RunFailure) -> bool:
    """Store ``job``'s turn as a run that failed with ``failure``; False when the thread
    has another active run, or the run exists already (a redelivery recorded it)."""
    user = Message.user(job.message.text, id=job.message.id)
    try:
        record = store.begin_run(
            job.thread_id,
            job.run_id,
            owner=job.owner,
            start={"message": user.id, "frontendTools": [t.to_json() for t in job.frontend_tools]},
            first_messages=[user],
            lease_expires_at=datetime.now(UTC),
        )
        store.write_run(
            record,
            status="failed",
            error=failure.message,
            checkpoint=Checkpoint(failure=failure.stored()),
            lease_expires_at=None,
        )
    except (RunInFlightError, ConflictError) as exc:
        logger.info("turn %s of thread %s not stored as failed: %s", job.run_id, job.thread_id, exc)
        return False
    return True
