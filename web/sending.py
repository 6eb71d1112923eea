"""Sending tasks by name from the web, and starting a thread's queued turn."""

from __future__ import annotations

from celery.result import AsyncResult

from relayline.channels.runs.queued_turns import release_when_idle
from relayline.channels.stream.log import LogLimits
from relayline.shared.jobs import ContinueJobJSON, TurnJobJSON, shown_kwargs
from relayline.shared.records import ACTIVE_STATUSES
from relayline.web.services import Services


class _Unread(AsyncResult):  # type: ignore[type-arg]  # never parameterised: unread
    """What ``send_task`` hands back instead of an ``AsyncResult``: the web never reads
    a task's result, and building an ``AsyncResult`` builds Celery's result backend,
    which Celery keeps per thread, so under gevent once per request greenlet."""

    def __init__(self, task_id: str) -> None:  # no super(): that builds the backend
        self.id = task_id
        self.backend = None  # type: ignore[assignment]  # what AsyncResult.__del__ reads


def send_by_name(svc: Services, task: str, job: TurnJobJSON | ContinueJobJSON) -> None:
    svc.celery.send_task(
        task,
        kwargs={"job": job},
        # RELAYLINE_QUEUE routes turns to dedicated workers; None: Celery's default queue.
        queue=svc.settings.queue,
        argsrepr="()",
        kwargsrepr=shown_kwargs(task, job["threadId"], job["runId"]),
        # Nothing per greenlet (measured under gevent: 630 to 510 us a send): no result
        # backend, no parent task to look up, the process's own reply address rather
        # than Celery's per-thread one (results are ignored; nothing replies to it).
        ignore_result=True,
        result_cls=_Unread,
        add_to_parent=False,
        reply_to=svc.celery.oid,
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
