"""Say when a relayed turn waits for a worker, and give up on it when none comes.

A relayed response sends nothing (not even its headers: the WSGI server sends them with
the first bytes of the body) until the worker writes the segment's first event. With no
worker running, a client saw nothing at all. So, while its segment is still silent:

- after RELAYLINE_QUEUED_NOTICE_SECONDS (2 s) with no task holding the segment's start
  (channels.runs.claims), the response starts: a ``queued`` status frame in the
  protocol's own vocabulary (``status_frames``), then comment heartbeats that keep the
  connection alive;
- after RELAYLINE_NO_WORKER_SECONDS (60 s; RELAYLINE_RELAY_TIMEOUT when shorter) with no
  live worker (channels.runs.workers; while workers live but are all busy, the turn
  waits on, up to RELAYLINE_RELAY_TIMEOUT, with a fresh ``queued`` status each time the
  deadline moves) the relay withdraws the turn: it takes the segment's start for
  ``withdrawn`` (a task that comes later finds it and does nothing: no run, no stored
  message), uncounts it from the broker's backlog, takes back the thread's active
  segment (the thread is free for a new turn) and gives back a continuation's claim on
  the interruption it answered (the run still waits for an answer). The client gets a
  ``withdrawn`` status and the protocol's error frame with the code ``no_worker``
  (``NoWorkerError``). A task that took the start first wins: the relay goes on
  relaying it.

AG-UI clients refuse any event before ``RUN_STARTED``, so the AG-UI notice starts the
run itself (the client's run id, as the worker's adapter would) and the worker's own
``RUN_STARTED``, the first event of its segment, is dropped from this response.

Only a relayed turn sent at once waits here: a turn queued behind its thread's run
(``multitask=enqueue``) says so itself, and a pushed one answers 202 at once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Generator
from typing import Literal, NotRequired, TypedDict

from redis.exceptions import RedisError

from relayline.channels.runs.claims import taken_by_task, withdraw_before_start
from relayline.channels.runs.workers import live
from relayline.channels.stream.log import ActiveSegment
from relayline.channels.stream.reader import Subscription
from relayline.channels.stream.splice import Spliced
from relayline.shared.errors import NoWorkerError
from relayline.shared.events import ProtocolEvent
from relayline.shared.jobs import ContinueJob, TurnJob
from relayline.shared.protocols import adapter_factory, failure_frames
from relayline.shared.settings import Settings
from relayline.shared.sse import HEARTBEAT as SSE_HEARTBEAT
from relayline.shared.sse import encode_event
from relayline.shared.texts import no_worker
from relayline.web.admission import retract, withdraw
from relayline.web.continuations import release_answer
from relayline.web.services import Services

logger = logging.getLogger("relayline.web")

#: the AG-UI CUSTOM event's name, the Vercel data part's type and the native frame's
STATUS_NAME = "relayline.status"
VERCEL_STATUS_PART = "data-relayline-status"
NATIVE_STATUS_EVENT = "status"

WaitState = Literal["queued", "withdrawn"]


class WaitStatus(TypedDict):
    """What a status frame carries (AG-UI ``value``, Vercel ``data``, native fields)."""

    #: ``queued``: no worker has taken the turn yet; ``withdrawn``: none came in time
    state: WaitState
    #: seconds the turn has waited so far
    waited: float
    #: seconds (from the turn's start) after which the turn is withdrawn if no worker
    #: takes it; moved on while live workers are all busy
    withdrawAfter: float
    #: the live workers seen (0: none runs; more: all are busy)
    workers: int
    #: with ``withdrawn``: the error code the error frame that follows carries
    code: NotRequired[str]


def status_frames(
    job: TurnJob | ContinueJob, status: WaitStatus, *, start: bool
) -> list[ProtocolEvent]:
    """A status in the job's protocol; ``start``: the AG-UI run is started first."""
    if job.protocol == "agui":
        started = adapter_factory("agui", job.thread_id, job.seed)().start() if start else []
        custom = ProtocolEvent("CUSTOM", {"name": STATUS_NAME, "value": dict(status)})
        return [*started, custom]
    if job.protocol == "vercel":
        # Transient: useChat hands it to onData and keeps it out of the message.
        data = {"data": dict(status), "transient": True}
        return [ProtocolEvent(VERCEL_STATUS_PART, data)]
    return [ProtocolEvent(NATIVE_STATUS_EVENT, dict(status))]


@dataclasses.dataclass(frozen=True)
class WaitTimes:
    """When a relayed turn is said queued, and when it is withdrawn (seconds)."""

    notice: float
    give_up: float
    heartbeat: float
    #: the longest wait while live workers are all busy (the relay's timeout)
    longest: float

    @classmethod
    def from_settings(cls, settings: Settings, heartbeat: float) -> WaitTimes:
        give_up = min(settings.no_worker_seconds, settings.relay_timeout)
        notice = min(settings.queued_notice_seconds, give_up)
        return cls(notice, give_up, heartbeat, settings.relay_timeout)


class WorkerWait:
    """One relayed turn's wait for a worker (``until_taken``)."""

    def __init__(
        self,
        svc: Services,
        job: TurnJob | ContinueJob,
        segment_id: str,
        times: WaitTimes,
        began: float | None = None,
    ) -> None:
        self.svc = svc
        self.job = job
        self.segment_id = segment_id
        self.times = times
        self.began = time.monotonic() if began is None else began
        #: the AG-UI run was started here: the worker's RUN_STARTED is dropped
        self.sent_start = False

    def until_taken(self, subscription: Subscription) -> Generator[str, None, list[Spliced] | None]:
        """Yield the status frames and heartbeats while no worker writes the segment;
        return its first batch of events (the duplicate RUN_STARTED dropped), or None
        when the turn was withdrawn (its frames are out). Raises what the subscription
        raises (the caller ends the stream with its error frames)."""
        first = self._first(subscription, self.times.notice)
        if first is not None:
            return first  # the common case: a worker wrote within the notice
        if taken_by_task(self.svc.redis, self.segment_id):
            # A worker took it and is getting ready: no notice, and no withdrawal.
            return (yield from self._until_written(subscription))
        deadline = self.times.give_up
        yield self._status("queued", deadline, self._live_workers())
        while True:
            left = deadline - self._waited()
            first = self._first(subscription, min(self.times.heartbeat, max(left, 0.0)))
            if first is not None:
                return self._dedup(first)
            if self._waited() < deadline:
                yield SSE_HEARTBEAT
                continue
            workers = self._live_workers()
            if self._waited() < self.times.longest and workers:
                # Workers live, all busy: the turn runs once one is free. It waits on,
                # up to the relay's timeout; the client is told the new deadline.
                deadline = min(self._waited() + self.times.give_up, self.times.longest)
                yield self._status("queued", deadline, workers)
                continue
            start = withdraw_before_start(
                self.svc.redis, self.segment_id, self.svc.settings.stream_max_age
            )
            if start.run_id is not None:  # a task took it at the last moment
                return self._dedup((yield from self._until_written(subscription)))
            yield from self._withdrawn(workers)
            return None

    def _until_written(self, subscription: Subscription) -> Generator[str, None, list[Spliced]]:
        """The first batch of a segment a task holds, heartbeats meanwhile; the relay's
        timeout applies as on any silence."""
        batches = subscription.batches(
            wait=self.times.heartbeat, timeout=self.svc.settings.relay_timeout
        )
        try:
            for batch in batches:
                if batch is None:
                    yield SSE_HEARTBEAT
                    continue
                return batch
        finally:
            batches.close()
        raise AssertionError("a subscription's batches end with their terminal")

    def _first(self, subscription: Subscription, wait: float) -> list[Spliced] | None:
        """The first batch written within ``wait`` seconds, else None."""
        wait = max(wait, 0.001)
        # The wait is bounded by WaitTimes, not by the relay's silence timeout, which
        # would fire instead of the None when it is not longer than ``wait``.
        batches = subscription.batches(wait=wait, timeout=wait + 1.0)
        try:
            return next(batches)
        finally:
            batches.close()

    def _dedup(self, batch: list[Spliced]) -> list[Spliced]:
        """``batch`` without the worker's RUN_STARTED when this response sent its own."""
        if not self.sent_start:
            return batch
        for index, event in enumerate(batch):
            if event.type == "RUN_STARTED":
                self.sent_start = False  # only the first: a later one is the worker's own
                return batch[:index] + batch[index + 1 :]
        return batch

    def _waited(self) -> float:
        return time.monotonic() - self.began

    def _live_workers(self) -> int:
        """How many workers beat now (channels.runs.workers); 0 when Redis cannot say."""
        try:
            return len(live(self.svc.redis, self.svc.settings.heartbeat_ttl))
        except RedisError:
            return 0

    def _status(
        self, state: WaitState, deadline: float, workers: int, code: str | None = None
    ) -> str:
        status: WaitStatus = {
            "state": state,
            "waited": round(self._waited(), 1),
            "withdrawAfter": round(deadline, 1),
            "workers": workers,
        }
        if code is not None:
            status["code"] = code
        start = self.job.protocol == "agui" and not self.sent_start and state == "queued"
        frames = status_frames(self.job, status, start=start)
        self.sent_start = self.sent_start or start
        return "".join(encode_event(frame) for frame in frames)

    def _withdrawn(self, workers: int) -> Generator[str, None, None]:
        """Take back what the turn left (a count, the thread's active segment, an
        answer's claim), then tell the client (``workers``: the live workers seen)."""
        svc, job = self.svc, self.job
        withdraw(svc, self.segment_id, job.owner)
        retract(svc, job.thread_id, ActiveSegment(job.protocol, self.segment_id))
        if isinstance(job, ContinueJob):
            release_answer(svc, job, self.segment_id)
        logger.warning(
            "turn %s of thread %s withdrawn: no worker took it within %.1f s",
            self.segment_id,
            job.thread_id,
            self._waited(),
        )
        error = NoWorkerError(no_worker(round(self._waited())))
        yield self._status("withdrawn", self._waited(), workers, error.code)
        # A new turn's run never existed: native ``done`` ends it for good. A
        # continuation's run still waits for its answer: no ``done`` for it.
        ended = job.run_id if isinstance(job, TurnJob) else None
        frames = failure_frames(
            job.protocol, job.thread_id, job.seed, error, started=self.sent_start, ended_run=ended
        )
        yield "".join(encode_event(frame) for frame in frames)
