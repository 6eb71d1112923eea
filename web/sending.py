"""Sending tasks by name from the web, and starting a thread's queued turn."""

from __future__ import annotations

from channels.log import LogLimits
from channels.turns import release_when_idle
from shared.jobs import ContinueJobJSON, TurnJobJSON, shown_kwargs
from shared.records import ACTIVE_STATUSES
from web.services import Services


def send_by_name(svc: Services, task: str, job: TurnJobJSON | ContinueJobJSON) -> None:
    svc.celery.send_task(
        task,
        kwargs={"job": job},
        # RELAYLINE_QUEUE routes turns to dedicated workers; None: Celery's default queue.
        queue=svc.settings.queue,
        argsrepr="()",
        kwargsrepr=shown_kwargs(task, job["threadId"], job["runId"]),
    )


def release_if_idle(svc: Services, thread_id: str) -> None:
    """Start the thread's next queued turn when no run holds the thread."""

    def busy() -> bool:
        record = svc.store.current_run(thread_id)
        return record is not None and record.status in ACTIVE_STATUSES

    limits = LogLimits.from_settings(svc.settings)
    release_when_idle(
        svc.redis, thread_id, limits, lambda task, job: send_by_name(svc, task, job), busy
    )
