"""Stopping a thread's run on a person's request, from any process.

A running run is stopped by its executor: the request is recorded on the run
(``Store.request_stop``) and the caller wakes the worker (``relayline.worker.stops``); the loop
ends the run ``cancelled`` at its next delta, model call or tool boundary. A suspended
run has no executor, so it is settled here: every call it waits on is answered as
stopped and the run is written ``cancelled`` in one compare-and-set. Either way the
thread takes the next turn as soon as the run is ``cancelled``.

The answer is decided in the database, never guessed: recording the stop is a
conditional update on a run still active, and the executor's completing or suspending
write is conditional on no stop being recorded, so of a stop and a run's end exactly one
wins. ``stopped: true`` means the run ends ``cancelled``; ``stopped: false`` comes with
the status it ended with.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

from relayline.shared import batch as batches
from relayline.shared.errors import ConflictError
from relayline.shared.persistence.store import RunRecord, Store
from relayline.shared.records import Checkpoint, RunStatus

#: bound on compare-and-set retries when the run moves while it is being stopped
_ATTEMPTS = 5


@dataclasses.dataclass(frozen=True)
class StopOutcome:
    """``stopped``: the run was active and is stopped or stopping now (False: there was
    nothing to stop). ``status`` is the run's status after the request (None: no run);
    ``running``: its executor still has to act on the request, so its stream ends
    shortly with the protocol's own "stopped" frames."""

    stopped: bool
    run_id: str | None
    status: RunStatus | None
    running: bool


def stop_thread(store: Store, thread_id: str) -> StopOutcome:
    """Stop the thread's current run; idempotent (a finished run answers False)."""
    return _stop(store, thread_id, lambda: store.current_run(thread_id))


def stop_run(store: Store, thread_id: str, run_id: str, wait: float) -> StopOutcome:
    """Stop the run ``run_id`` of the thread, whose task has started but may not have
    admitted it yet: its record is awaited at most ``wait`` seconds (a run never
    admitted, or not within the wait, answers False: nothing of it was stopped)."""
    if wait_for_run(store, thread_id, run_id, wait) is None:
        return StopOutcome(False, run_id, None, False)
    return _stop(store, thread_id, lambda: store.run(thread_id, run_id))


def _stop(store: Store, thread_id: str, read: Callable[[], RunRecord | None]) -> StopOutcome:
    """Stop the run ``read`` returns. The answer is what happened: ``stopped`` only once
    the stop is recorded on a running run (whose executor's completion is then refused,
    ``Store.write_run(unless_stopped=True)``) or the suspended run is written
    ``cancelled``; else the status the run ended with."""
    for _ in range(_ATTEMPTS):
        record = read()
        if record is None:
            return StopOutcome(False, None, None, False)
        if record.status == "running":
            stopped = store.request_stop(thread_id, record.run_id)
            if stopped is not None and stopped.status == "running":
                return StopOutcome(True, record.run_id, "running", True)
            continue  # it ended or suspended meanwhile: look again
        if record.status != "suspended":
            return StopOutcome(False, record.run_id, record.status, False)
        try:
            cancelled = cancel_suspended(store, record)
        except ConflictError:
            continue  # answered or expired meanwhile: look again
        return StopOutcome(True, cancelled.run_id, cancelled.status, False)
    raise ConflictError(f"The run of thread '{thread_id}' kept changing; retry the stop.")


def cancel_suspended(store: Store, record: RunRecord) -> RunRecord:
    """Settle a suspended run's open calls as stopped and write it ``cancelled``."""
    batch = record.checkpoint.get("batch")
    accepted = record.accepted
    append = []
    if batch is not None:
        accepted = batches.stopped(batch, accepted)
        append.append(batches.tool_message(batch, accepted))
    checkpoint: Checkpoint = {**record.checkpoint, "batch": None}
    store.request_stop(record.thread_id, record.run_id)
    return store.write_run(
        record,
        append=append,
        status="cancelled",
        interrupt=None,
        accepted=accepted,
        checkpoint=checkpoint,
        lease_expires_at=None,
    )


def wait_for_run(
    store: Store, thread_id: str, run_id: str, timeout: float, poll: float = 0.01
) -> RunRecord | None:
    """The run once its record exists, waiting at most ``timeout`` seconds (None: it
    does not exist by then)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()  # never set: a bounded wait between reads of the record
    while True:
        record = store.run(thread_id, run_id)
        if record is not None or time.monotonic() >= deadline:
            return record
        pause.wait(poll)


def wait_stopped(
    store: Store, thread_id: str, run_id: str, timeout: float, poll: float = 0.02
) -> RunRecord | None:
    """The run once it is no longer running (None when it is gone), waiting at most
    ``timeout`` seconds for its executor to act on a stop; then the run as it stands."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()  # never set: a bounded wait between reads of the record
    while True:
        record = store.run(thread_id, run_id)
        if record is None or record.status != "running" or time.monotonic() >= deadline:
            return record
        pause.wait(poll)
