"""One answer per interruption: of concurrent continuations of a run (approvals, tool
results, through any protocol) exactly one is sent to a worker; every other is refused
with 409 before anything is announced or sent, with the state it lost to.

Staging reads the run and refuses what it can (``RunNotWaitingError`` with
``RUN_NOT_WAITING`` once the run runs or has ended), but requests that read the run
while it still waited all pass staging. The claim decides among them: the first to
claim ``(run, attempt)`` in Redis (``channels.runs.claims``) continues; the others get
``ALREADY_ANSWERED``. The worker's compare-and-set on the run stays the last fence. An
identical repeat of answers the run already accepted claims nothing: it changes
nothing (its segment repeats the interruption), and a claim it held would refuse the
run's next real answer at the same attempt.

The claim lives for the relay timeout: a request that could not send gives it back at
once; one whose process died between claim and send holds it that long (the run can be
stopped meanwhile). A continuation still queued after it lapses is fenced by the worker
as before (its stream says ``RUN_CONTINUES_ELSEWHERE``).
"""

from __future__ import annotations

import logging

from relayline.channels.runs.claims import claim_continuation, release_continuation
from relayline.shared.errors import RunNotWaitingError
from relayline.shared.jobs import ContinueJob
from relayline.web.services import Services

logger = logging.getLogger("relayline.web")


def claim_answer(svc: Services, job: ContinueJob, segment_id: str) -> None:
    """Claim the answer to the interruption ``job`` was staged against for the segment
    ``segment_id``; raises RunNotWaitingError (409) when another request claimed it."""
    holder = claim_continuation(
        svc.redis, job.run_id, job.attempt, segment_id, svc.settings.relay_timeout
    )
    if holder == segment_id:
        return
    record = svc.store.run(job.thread_id, job.run_id)
    status = "unknown" if record is None else record.status
    raise RunNotWaitingError(
        f"Run '{job.run_id}' was already answered by another request (attempt "
        f"{job.attempt}); it is {status}. Resume the thread's stream to follow it.",
        code="ALREADY_ANSWERED",
        run_id=job.run_id,
        status=status,
    )


def release_answer(svc: Services, job: ContinueJob, segment_id: str) -> None:
    """Give the claim back: the continuation was not sent."""
    try:
        release_continuation(svc.redis, job.run_id, job.attempt, segment_id)
    except Exception:  # it lapses with its lifetime; the refusal goes on regardless
        logger.warning("could not release the answer claim of run %s", job.run_id)
