"""The run log: one structured line per run transition a task makes, on the logger
``relayline.runs``.

A task's start is the run entering ``running`` (``run.started`` for a new turn,
``run.resumed`` for a continuation, ``run.recovered`` after a lost worker,
``run.expiring`` for a lapsed frontend wait); its end says where the run went
(``run.completed``, ``run.suspended``, ``run.failed``; ``run.skipped`` when the task
found nothing to do or left the run to another; ``run.refused`` when it refused the job
and told the client; ``run.error`` when it raised). Every line carries ``thread_id``,
``run_id``, ``attempt``, ``agent`` and ``task_id``; the end line adds ``duration_ms``,
the task's ``outcome`` and the run's stored ``status``. A new turn's start line has
``attempt`` null: its run is not stored yet.

A failed or refused run's end line is a WARNING that says why: ``reason`` (the failure
code, relayline.shared.failures), ``error`` (what the thread's owner was told) and,
when it adds to it, ``detail`` (what happened; keys redacted): the one line an operator
reads for it.

Nothing a person wrote reaches this log (no message text, no tool arguments or
answers) unless the logger is enabled for DEBUG (``--loglevel DEBUG``): then the start
line adds the turn's ``text`` or the continuation's ``answers``.

RELAYLINE_LOG_FORMAT=json writes each line as one JSON object on stderr; ``text``
(default) hands the record to the worker's own handlers, the fields as ``extra`` too,
so a host's JSON formatter sees them.

Celery's signals see every task of the process; only relayline's are logged. They run
in the process that executes the task (a pool child), so the timing is the task's own.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any, Final, TypedDict

from celery.signals import task_postrun, task_prerun

from relayline.shared import metrics
from relayline.shared.failures import RunFailure
from relayline.shared.jobs import CONTINUE_RUN, DEFAULT_AGENT, EXPIRE_WAIT, RECOVER_RUN, RUN_TURN
from relayline.worker.resources import resources

logger = logging.getLogger("relayline.runs")

#: the transition a task's start makes, by task name
STARTS: Final = {
    RUN_TURN: "run.started",
    CONTINUE_RUN: "run.resumed",
    RECOVER_RUN: "run.recovered",
    EXPIRE_WAIT: "run.expiring",
}
#: task outcomes that are where the run went (or that the task refused it); any other
#: outcome is ``run.skipped``
ENDS: Final = frozenset({"completed", "suspended", "failed", "cancelled", "refused"})


class RunLine(TypedDict, total=False):
    """The fields of one line (``text`` and ``answers`` only at DEBUG)."""

    event: str
    thread_id: str
    run_id: str
    attempt: int | None
    agent: str
    task_id: str
    duration_ms: float
    outcome: str
    status: str | None
    reason: str
    error: str
    detail: str
    text: str
    answers: Any


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger and the run fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = dict(getattr(record, "run", {}))
        head = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        return json.dumps({**head, **fields}, ensure_ascii=False, default=str)


#: task id -> (monotonic start, the start line), in the process executing the task
_started: dict[str, tuple[float, RunLine]] = {}
#: task id -> (status, attempt) of the run as the task left it (``ended``)
_ended: dict[str, tuple[str, int]] = {}
#: task id -> why its run failed or was refused (``failed``)
_failures: dict[str, RunFailure] = {}
_configured: list[str] = []


def configure(log_format: str) -> None:
    """Install the JSON handler once per process when RELAYLINE_LOG_FORMAT=json."""
    if _configured:
        return
    _configured.append(log_format)
    if log_format == "json":
        # The real stderr: a Celery worker replaces sys.stderr with a proxy that logs
        # each write again as a WARNING of its own.
        handler = logging.StreamHandler(sys.__stderr__)
        handler.setFormatter(JSONFormatter())
        logger.addHandler(handler)
        logger.propagate = False  # one line per transition, not also the text one


def ended(task_id: str | None, status: str, attempt: int) -> None:
    """The run as the task left it, so the end line need not read it back (one
    database read fewer per turn); a task that does not say is read from the store."""
    if task_id is not None and task_id in _started:
        _ended[task_id] = (status, attempt)


def failed(task_id: str | None, failure: RunFailure) -> None:
    """Why the task's run failed (or why the task refused it): its end line says it."""
    if task_id is not None and task_id in _started:
        _failures[task_id] = failure


def _emit(level: int, line: RunLine) -> None:
    if not logger.isEnabledFor(level):
        return  # the line's text and fields cost more than the check
    shown = " ".join(f"{k}={_shown(v)}" for k, v in line.items() if k != "event")
    extra = {"run": line, **{k: v for k, v in line.items() if k != "event"}}
    logger.log(level, "%s %s", line["event"], shown, extra=extra)


def _shown(value: object) -> str:
    """A text line's value: bare when it is one word, else JSON (quoted, escaped)."""
    if isinstance(value, str | int | float | None) and " " not in str(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _job(kwargs: Any) -> dict[str, Any] | None:
    job = kwargs.get("job") if isinstance(kwargs, dict) else None
    return job if isinstance(job, dict) else None


@task_prerun.connect
def _task_started(task_id: str, task: Any, kwargs: Any = None, **_: object) -> None:
    event = STARTS.get(getattr(task, "name", ""))
    job = _job(kwargs)
    if event is None or job is None:
        return
    try:
        configure(resources().settings.log_format)
        attempt = job.get("attempt")
        line: RunLine = {
            "event": event,
            "thread_id": str(job.get("threadId")),
            "run_id": str(job.get("runId")),
            "attempt": attempt if isinstance(attempt, int) else None,
            "agent": str(job.get("agentId", DEFAULT_AGENT)),
            "task_id": task_id,
        }
        _started[task_id] = (time.monotonic(), line)
        metrics.RUNS.labels(line["agent"], event.removeprefix("run.")).inc()
        if logger.isEnabledFor(logging.DEBUG):  # what a person wrote, only when asked
            message = job.get("message")
            if isinstance(message, dict):
                line = {**line, "text": str(message.get("text", ""))}
            if "answers" in job:
                line = {**line, "answers": job["answers"]}
        _emit(logging.INFO, line)
    except Exception:  # the log never stops a turn
        logger.debug("could not log the start of task %s", task_id, exc_info=True)


@task_postrun.connect
def _task_ended(task_id: str, retval: Any = None, state: str | None = None, **_: object) -> None:
    started = _started.pop(task_id, None)
    known = _ended.pop(task_id, None)
    failure = _failures.pop(task_id, None)
    if started is None:
        return
    began, line = started
    try:
        outcome = retval if isinstance(retval, str) else type(retval).__name__
        if state != "SUCCESS":
            event = "run.error"
        else:
            event = f"run.{outcome}" if outcome in ENDS else "run.skipped"
        status, attempt = known if known is not None else _stored(line)
        end: RunLine = {
            **line,
            "event": event,
            "attempt": attempt,
            "duration_ms": round((time.monotonic() - began) * 1000, 1),
            "outcome": outcome,
            "status": status,
        }
        if failure is not None:
            end = {**end, "reason": failure.code, "error": failure.message}
            if failure.message not in failure.detail:  # else the error says it all
                end["detail"] = failure.detail
        warn = event == "run.error" or failure is not None
        _emit(logging.WARNING if warn else logging.INFO, end)
        if event != "run.skipped":
            metrics.RUNS.labels(line["agent"], event.removeprefix("run.")).inc()
        metrics.TURN_SECONDS.labels(line["agent"], outcome).observe(time.monotonic() - began)
    except Exception:
        logger.debug("could not log the end of task %s", task_id, exc_info=True)


def _stored(line: RunLine) -> tuple[str | None, int | None]:
    """The run's status and attempt as stored (the start line's attempt when absent)."""
    record = resources().store.run(line["thread_id"], line["run_id"])
    if record is None:
        return None, line.get("attempt")
    return record.status, record.attempt
