"""Sending tasks by name from the web, and starting a thread's queued turn."""

from __future__ import annotations

from channels.log import LogLimits
from channels.turns import release_next
from shared.jobs import ContinueJobJSON, TurnJobJSON
from shared.records import ACTIVE_STATUSES
from web.services import Services


def send_by_name(svc: Services, task: str, job: TurnJobJSON | ContinueJobJSON) -> None:
    # Celery would otherwise put a repr of the whole job (the person's message, the
    # client's seed) into the message headers for monitors and logs: it costs a
    # quarter of send_task's time and shows user text to every log reader.
    shown = f"{{'job': <{task} thread={job['threadId']} run={job['runId']}>}}"
    svc.celery.send_task(
        task,
        kwargs={"job": job},
        # RELAYLINE_QUEUE routes turns to dedicated workers; None: Celery's default queue.
        queue=svc.settings.queue,
        argsrepr="()",
        kwargsrepr=shown,
    )


def release_if_idle(svc: Services, thread_id: str) -> None:
    """Start the thread's next queued turn when no run holds the thread."""
    record = svc.store.current_run(thread_id)
    if record is not None and record.status in ACTIVE_STATUSES:
        return
    limits = LogLimits.from_settings(svc.settings)
    release_next(svc.redis, thread_id, limits, lambda task, job: send_by_name(svc, task, job))
