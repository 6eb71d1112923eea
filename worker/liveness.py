"""Liveness of runs, so that a worker lost mid-run (SIGKILL, OOM, a lost node) never
locks its thread for the broker's visibility timeout.

A task executing a run keeps a short heartbeat in Redis (``RunHeartbeat``: set before the
run is admitted, renewed every ``heartbeat_interval`` seconds, living ``heartbeat_ttl``
seconds unrenewed) and records the job it executes. Every worker's main process runs a
``Sweeper`` thread; under a Redis lock held for one interval, one of them per interval
looks at the ``running`` runs a Celery task executes and enqueues the recovery of each
whose heartbeat lapsed: ``relayline.recover_run`` continues it from its last checkpoint
at the attempt it was seen at, and admitting the recovery moves the attempt on, so the
lost worker (or a slow one that comes back) can never write again.

A beat names its holder by an instance id, chosen at random when the process starts
(again in each forked child), and a token of its own; host and pid are there for
operators to read (``host:pid:instance:token``). The instance id is the holder's only
identity: host and pid prove nothing (containers that share a hostname have their own
PID namespaces, so two live workers can carry the same host and pid). So a beat of
another instance is alive until its TTL lapses, whatever host and pid it names, and a
beat of this very instance is alive only while its token is open here (``_open``):
under the threads pool every task of a worker shares the instance, so the process keeps
the tokens of the heartbeats open in it now.

Why a sweeper in every worker rather than a Celery beat schedule: operators run
workers already (the Procfile has web and worker); a beat process is one more thing to
forget, and one that is down would silently stop recovery. The lock keeps the sweeps
of many workers to one per interval.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import cast

import redis

from relayline.channels.keys import SWEEP_LOCK, heartbeat_key, job_key, recovery_key
from relayline.shared.jobs import AnyJob, Job, JobError, RecoverJob, Target
from relayline.shared.jsonutil import dumps
from relayline.shared.persistence import RunRecord, Store

logger = logging.getLogger("relayline.liveness")


__all__ = [
    "RunHeartbeat",
    "Sweeper",
    "beat_alive",
    "heartbeat_key",
    "holder_alive",
    "lapsed",
    "recovery_job",
]


class RunHeartbeat:
    """While open, ``job``'s run has a heartbeat that the process's renewer thread
    renews; the job is recorded for ``keep_job`` seconds so that a recovery delivers
    where it did."""

    def __init__(
        self,
        client: redis.Redis,
        job: AnyJob,
        *,
        ttl: float,
        interval: float,
        keep_job: float,
        take: bool = True,
    ) -> None:
        self.client = client
        #: overwrite another holder's beat (it is gone); else beat only once it is free
        self.take = take
        self.key = heartbeat_key(job.run_id)
        self.job = job
        self.ttl_ms = int(ttl * 1000)
        self.interval = interval
        self.keep_job = int(keep_job)
        #: this heartbeat's own holder stamp: a duplicate in the same process never
        #: renews or drops the holder's beat
        self.stamp = f"{holder()}:{uuid.uuid4().hex[:16]}"

    def __enter__(self) -> RunHeartbeat:
        _opened(self.stamp)
        try:
            recorded = dumps(self.job.to_json())
            if self.take:
                # One round trip for both (a fixed cost of every turn).
                pipe = self.client.pipeline(transaction=False)
                pipe.set(self.key, self._holder(), px=self.ttl_ms)
                pipe.set(job_key(self.job.run_id), recorded, ex=self.keep_job)
                pipe.execute()
            elif self._beat(force=False):
                self.client.set(job_key(self.job.run_id), recorded, ex=self.keep_job)
        except redis.RedisError:
            # The run still executes into history; the renewals below keep trying.
            logger.warning("could not start the heartbeat of run %s", self.job.run_id)
        _renewer().add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _renewer().remove(self)
        _closed(self.stamp)
        try:
            # Not executed here any more: a run this task left ``running`` is swept. Only
            # our own beat: a duplicate that never ran the run must not end the holder's.
            self.client.eval(_RELEASE, 1, self.key, self._holder())
        except redis.RedisError:
            logger.warning("could not drop the heartbeat of run %s", self.job.run_id)

    def _holder(self) -> str:
        return self.stamp

    def _beat(self, *, force: bool) -> bool:
        """Set the beat (``force``), or renew it when it is ours or nobody's."""
        if force:
            return bool(self.client.set(self.key, self._holder(), px=self.ttl_ms))
        return bool(self.client.eval(_BEAT, 1, self.key, self._holder(), self.ttl_ms))

    def renew(self) -> None:
        try:
            self._beat(force=False)
        except redis.RedisError:
            # Redis away: the run goes on; if it stays away the sweep cannot run either.
            logger.warning("could not renew the heartbeat of run %s", self.job.run_id)


class _Renewer:
    """One daemon thread per process renews every open heartbeat at its interval: a
    thread started and joined per turn was a fixed cost of every turn."""

    def __init__(self) -> None:
        self._due: dict[RunHeartbeat, float] = {}  # heartbeat -> monotonic time of its renewal
        self._wake = threading.Condition()
        self._renewing: set[RunHeartbeat] = set()
        self._thread = threading.Thread(target=self._run, name="relayline-heartbeat")
        self._thread.daemon = True  # a lost process takes its heartbeats with it
        self._thread.start()

    def add(self, beat: RunHeartbeat) -> None:
        with self._wake:
            self._due[beat] = time.monotonic() + beat.interval
            self._wake.notify_all()

    def remove(self, beat: RunHeartbeat) -> None:
        # Waits for a renewal of it in flight: none may land after the release.
        with self._wake:
            self._due.pop(beat, None)
            while beat in self._renewing:
                self._wake.wait()

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                ready = [b for b, at in self._due.items() if at <= now]
                for beat in ready:
                    self._due[beat] = now + beat.interval
                if not ready:
                    self._wake.wait(min(self._due.values(), default=now + 60.0) - now)
                    continue
                self._renewing.update(ready)
            try:
                for beat in ready:
                    beat.renew()
            finally:
                with self._wake:
                    self._renewing.clear()
                    self._wake.notify_all()


#: the renewer of this process (built again after a fork: threads do not survive it)
_renewers: dict[int, _Renewer] = {}
_renewers_lock = threading.Lock()


def _renewer() -> _Renewer:
    pid = os.getpid()
    found = _renewers.get(pid)
    if found is None:
        with _renewers_lock:
            found = _renewers.get(pid)
            if found is None:
                found = _renewers[pid] = _Renewer()
    return found


#: the stamps of the heartbeats open in this process, and their lock (pool threads open
#: and close them concurrently)
_open: set[str] = set()
_open_lock = threading.Lock()
#: (pid, instance id) of this process; drawn again after a fork
_instance: tuple[int, str] | None = None


def _opened(stamp: str) -> None:
    with _open_lock:
        _open.add(stamp)


def _closed(stamp: str) -> None:
    with _open_lock:
        _open.discard(stamp)


def instance_id() -> str:
    """This process's instance id: random, drawn at its start and again in each forked
    child (the pid is read only to notice a fork, never to tell processes apart)."""
    global _instance
    if _instance is None or _instance[0] != os.getpid():
        _instance = (os.getpid(), uuid.uuid4().hex)
    return _instance[1]


def holder() -> str:
    """This process, as a heartbeat names its holder: ``host:pid:instance`` (host and pid
    for operators; the instance id is what identifies it)."""
    return f"{socket.gethostname()}:{os.getpid()}:{instance_id()}"


def holder_alive(client: redis.Redis, run_id: str) -> bool:
    """Whether a task that may be alive holds ``run_id``'s heartbeat: the beat is live
    and names another instance (only its TTL lapsing proves it gone), or a heartbeat
    open in this very instance now (another pool thread executes the run). A beat of
    this instance that no open heartbeat owns (left by a task that ended) is not."""
    return beat_alive(cast(bytes | None, client.get(heartbeat_key(run_id))))


def beat_alive(raw: bytes | None) -> bool:
    """``holder_alive`` of a beat already read (``heartbeat_key``'s value)."""
    if raw is None:
        return False
    stamp = raw.decode("utf-8", "replace")
    parts = stamp.split(":")
    if len(parts) < 4 or parts[2] != instance_id():
        # Another instance, wherever it runs: the same host and pid as ours prove nothing
        # (another PID namespace under a shared hostname), nor does a pid missing here.
        return True
    with _open_lock:
        return stamp in _open


#: renew when ours or absent; a live beat of another holder is left alone
_BEAT = """
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
#: delete only our own beat
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


#: seconds between two sweeps (at most; never more than the heartbeat interval): a lost
#: worker is found within its beat's TTL and this, and its relayed clients told at once
SWEEP_INTERVAL = 1.0


def lapsed(
    store: Store,
    client: redis.Redis,
    *,
    ttl: float,
    quiet: float | None = None,
    now: datetime | None = None,
) -> list[RunRecord]:
    """Running runs a Celery task executes (their checkpoint names an executor) whose
    heartbeat is gone and that nothing wrote for ``quiet`` seconds (``ttl`` unless
    given). A holder renews its beat every heartbeat interval, so one that wrote the run
    and died has a beat that lapses at least ``ttl`` less one interval after that write:
    with ``quiet`` that long, the write never delays finding a dead holder, and a run
    written since its beat could have lapsed (a live holder whose beat Redis lost) is
    left alone."""
    moment = now or datetime.now(UTC)
    since = moment - timedelta(seconds=ttl if quiet is None else quiet)
    candidates = [
        record
        for record in store.running_runs()
        if "executor" in record.checkpoint and record.updated <= since
    ]
    if not candidates:
        return []
    pipe = client.pipeline(transaction=False)
    for record in candidates:
        pipe.exists(heartbeat_key(record.run_id))
    alive = pipe.execute()
    return [record for record, beating in zip(candidates, alive, strict=True) if not beating]


def recovery_job(client: redis.Redis, record: RunRecord, fallback: Target) -> RecoverJob:
    """The recovery of ``record``: delivered as the lost job was, when it was recorded,
    else natively to ``fallback`` (the configured push channel, or nowhere)."""
    raw = cast(bytes | None, client.get(job_key(record.run_id)))
    if raw is not None:
        try:
            return RecoverJob(**Job.head_fields(_loads(raw)), attempt=record.attempt)
        except JobError:
            logger.warning("the recorded job of run %s is unreadable", record.run_id)
    return RecoverJob(
        thread_id=record.thread_id,
        run_id=record.run_id,
        protocol="native",
        target=fallback,
        attempt=record.attempt,
    )


def _loads(raw: bytes) -> dict[str, object]:
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise JobError("A recorded job is not a JSON object.")
    return value


class Sweeper:
    """A daemon thread that sweeps every ``interval`` seconds while it holds the lock."""

    def __init__(
        self,
        store: Store,
        client: redis.Redis,
        send: Callable[[RecoverJob], None],
        fallback: Target,
        *,
        ttl: float,
        interval: float,
        quiet: float | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.send = send
        self.fallback = fallback
        self.ttl = ttl
        self.interval = interval
        #: see ``lapsed``
        self.quiet = quiet
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="relayline-sweeper")
        self._thread.daemon = True

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sweep(self) -> list[RecoverJob]:
        """One sweep: the recoveries it enqueued (each run and attempt at most once)."""
        sent: list[RecoverJob] = []
        for record in lapsed(self.store, self.client, ttl=self.ttl, quiet=self.quiet):
            claimed = self.client.set(
                recovery_key(record.run_id, record.attempt), "1", nx=True, ex=int(self.ttl * 4)
            )
            if not claimed:
                continue  # enqueued by an earlier sweep; its worker may still be starting
            job = recovery_job(self.client, record, self.fallback)
            self.send(job)
            sent.append(job)
            logger.warning(
                "run %s on thread %s lost its worker; recovery enqueued at attempt %s",
                record.run_id,
                record.thread_id,
                record.attempt,
            )
        return sent

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                me = holder()
                # One sweep per interval across all workers; the lock lapses by itself.
                if self.client.set(SWEEP_LOCK, me, nx=True, px=int(self.interval * 1000)):
                    self.sweep()
            except Exception:
                logger.exception("the sweep failed; retrying in %s s", self.interval)
