"""The tasks: run a new turn, continue a suspended run. Arguments are JSON only.

Both are idempotent under redelivery: a task that finds its own run still ``running``
takes it over from the last checkpoint only when the run's holder is gone (its
heartbeat lapsed, or it names a process of this host that no longer exists), so
completed backend tools never run twice. While the holder lives, a redelivered copy
of its own task exits quietly: the same job, so the holder keeps publishing to the same
target and stream; exiting rather than retrying until the beat lapses is safe because
a holder that dies later is recovered by the sweeper (worker.liveness) anyway.

A task refused because its run went on (a duplicate submission's loser, a run another
task holds) sends ``RunElsewhereError`` frames (the client resumes); only a refusal that
ends the run's story for this client (a failed run, a bad job) gets failure frames.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeAlias

import redis
from celery import Task
from celery.signals import worker_ready, worker_shutdown

from relayline.channels.keys import heartbeat_key, log_key
from relayline.channels.runs.backlog import uncount
from relayline.channels.runs.claims import SegmentStart, queue_start
from relayline.channels.runs.queued_turns import release_when_idle
from relayline.channels.runs.stops import process_watcher
from relayline.channels.stream.log import LogLimits
from relayline.shared.agent import Agent, Continuation
from relayline.shared.agent.agent import Segment
from relayline.shared.agent.segment import drain
from relayline.shared.agent.spec import AgentSpec, RunState
from relayline.shared.errors import (
    AgentUnavailableError,
    FencedOutError,
    RelaylineError,
    RunElsewhereError,
    RunFailedError,
    StaleRunError,
    WorkflowError,
)
from relayline.shared.failures import RunFailure, failure_of
from relayline.shared.interrupts import ToolResultsRequest
from relayline.shared.jobs import (
    CONTINUE_RUN,
    EXPIRE_WAIT,
    RECOVER_RUN,
    RUN_TURN,
    AnyJob,
    ClientSeed,
    ContinueJob,
    ContinueJobJSON,
    ExpireJob,
    ExpireJobJSON,
    JobError,
    RecoverJob,
    RecoverJobJSON,
    Target,
    TurnJob,
    TurnJobJSON,
    shown_kwargs,
)
from relayline.shared.messages import Message
from relayline.shared.protocols import adapter_factory, failure_frames
from relayline.shared.protocols.agui.seed import agui_seed
from relayline.shared.records import ACTIVE_STATUSES
from relayline.shared.stop_signal import StopSignal
from relayline.shared.tools import redactions
from relayline.worker import (
    model_check,  # noqa: F401  (checks the models when ready)
    runlog,
)
from relayline.worker.app import LEASE_SECONDS, TASK_TIME_LIMIT, app
from relayline.worker.failed_turns import record_failed_turn
from relayline.worker.liveness import (
    SWEEP_INTERVAL,
    RunHeartbeat,
    Sweeper,
    beat_alive,
    holder,
    holder_alive,
)
from relayline.worker.presence import Presence
from relayline.worker.registration import relayline_task
from relayline.worker.resources import Resources, resources
from relayline.worker.targets import channel_factory, push_target, with_segment

logger = logging.getLogger("relayline.worker")
#: any of the tasks below, as the helpers see it (they read only ``request``); a string,
#: so that no Celery release needs to subscript Task at run time
AnyTask: TypeAlias = "Task[..., str]"


def _agent(
    task: AnyTask,
    res: Resources,
    job: AnyJob,
    stop_signal: StopSignal | None = None,
    watched: bool = False,
) -> Agent:
    spec = res.registry.spec(job.agent_id)
    agent = Agent(
        job.thread_id,
        spec,
        res.store,
        owner=job.owner,
        lease_seconds=LEASE_SECONDS,
        executor=task.request.id,
        stop_signal=stop_signal,
        stops_watched=watched,
    )
    agent.set_stream_adapter(adapter_factory(job.protocol, job.thread_id, _seed(job, res, spec)))
    agent.set_channel(channel_factory(_target(job), job.thread_id, res, _stream(job), job.protocol))
    return agent


def _seed(job: AnyJob, res: Resources, spec: AgentSpec) -> ClientSeed:
    """The adapter's seed: the client's, completed from this worker's store (AG-UI's
    snapshot starts from the stored history, which the job does not carry)."""
    if job.protocol != "agui":
        return job.seed
    return agui_seed(res.store, job.thread_id, job.seed, redactions(spec.tools))


def _target(job: AnyJob) -> Target:
    if job.target is None:
        raise JobError(f"The job for thread {job.thread_id} names no delivery target.")
    return job.target


def _stream(job: AnyJob) -> str:
    assert job.segment_id is not None  # every task names its segment first (with_segment)
    return job.segment_id


def _publish_failure(res: Resources, job: AnyJob, error: BaseException) -> None:
    """Deliver error frames and ``stream.failed`` for a failure the run did not report."""
    try:
        # Only for a segment that never began: nothing of it was sent or logged yet.
        channel = channel_factory(_target(job), job.thread_id, res, _stream(job), job.protocol)()
        # A refusal ends the run for this client (native ``done``); ELSEWHERE does not.
        ended = None if error is ELSEWHERE else job.run_id
        frames = failure_frames(
            job.protocol, job.thread_id, job.seed, error, started=False, ended_run=ended
        )
        for frame in frames:
            channel.send(frame)
        channel.failed(error, job.thread_id)
    except Exception:
        logger.exception("could not publish the failure of thread %s", job.thread_id)


#: a refusal's frames when the run goes on: the client resumes instead of giving up
ELSEWHERE = RunElsewhereError("The run continues in another request; resume its stream.")


def _heartbeat(res: Resources, job: AnyJob, *, take: bool = True) -> RunHeartbeat:
    """The run's heartbeat while this task executes it (worker.liveness)."""
    return RunHeartbeat(
        res.redis,
        job,
        ttl=res.settings.heartbeat_ttl,
        interval=res.settings.heartbeat_interval,
        keep_job=TASK_TIME_LIMIT,
        take=take,
    )


def _execute(
    task: AnyTask, job: AnyJob, build: Callable[[Agent, Resources], Segment | None]
) -> str:
    res = resources()
    # Before our own beat is set: it would hide the holder's.
    start = _before_start(res, job)
    if start.withdrawn:
        # The relay gave up on this turn (no worker took it in time, web.waiting) and told
        # its client so: running it now would answer nobody.
        logger.warning(
            "turn %s of thread %s was withdrawn before a worker took it; not run",
            job.segment_id,
            job.thread_id,
        )
        return "withdrawn"
    alive = start.alive
    # Read only when a holder lives (a fixed cost a turn with no other holder skips).
    record = res.store.run(job.thread_id, job.run_id) if alive else None
    if alive and record is not None and record.status == "running":
        if record.checkpoint.get("executor") == task.request.id:
            logger.warning("task %s redelivered while run %s lives on", task.request.id, job.run_id)
            return "held elsewhere"  # the same job: its holder serves this target and stream
        _publish_failure(res, with_segment(job, res.redis, logged=start.logged), ELSEWHERE)
        return "held elsewhere"
    try:
        with _heartbeat(res, job, take=not alive):
            segment_job = with_segment(job, res.redis, logged=start.logged)
            return _execute_beating(task, res, segment_job, build, start.stopped)
    finally:
        _release_queued(res, job.thread_id)


class _Start(NamedTuple):
    """What a task reads before it starts (``_before_start``)."""

    #: a holder that may be alive has the run's beat (worker.liveness)
    alive: bool
    #: a stop came before the start
    stopped: bool
    #: the announced segment's log has entries already (worker.targets.with_segment);
    #: None when unknown
    logged: bool | None
    #: the relay withdrew the turn before this task took it: it must not run
    withdrawn: bool = False


def _before_start(res: Resources, job: AnyJob) -> _Start:
    """In one round trip (each was one, a fixed cost of every turn): uncount the turn,
    which no longer waits in the broker (channels.backlog), and read what ``_Start``
    holds."""
    stream = job.segment_id  # None: a recovery, never counted nor stopped before start
    pipe = res.redis.pipeline(transaction=False)
    pipe.get(heartbeat_key(job.run_id))
    if stream is not None:
        # Taken for the run unless a stop took it first (channels.runs.claims): a stop
        # that comes later finds the run's id and stops it through the database.
        queue_start(pipe, stream, job.run_id, res.settings.stream_max_age)
        pipe.exists(log_key(stream))
        uncount(pipe, stream, job.owner)
    try:
        replies = pipe.execute()
    except redis.RedisError:
        # Redis away: no beat can be read or kept; the run's compare-and-set still fences.
        # The stop is lost with it; the run goes on, as if it came late.
        logger.warning("could not uncount turn %s, read run %s's beat or stop", stream, job.run_id)
        return _Start(alive=False, stopped=False, logged=None)
    if stream is None:
        return _Start(alive=beat_alive(replies[0]), stopped=False, logged=None)
    start = SegmentStart.parse(replies[1])
    return _Start(
        beat_alive(replies[0]),
        stopped=start.stopped,
        logged=bool(replies[2]),
        withdrawn=start.withdrawn,
    )


def _release_queued(res: Resources, thread_id: str) -> None:
    """Start the thread's next queued turn (double texting) once its run has ended."""

    def busy() -> bool:
        record = res.store.current_run(thread_id)
        return record is not None and record.status in ACTIVE_STATUSES

    try:
        limits = LogLimits.from_settings(res.settings)
        release_when_idle(res.redis, thread_id, limits, _send_by_name, busy)
    except Exception:  # the turn stays queued; the next run's end releases it
        logger.exception("could not release the queued turn of thread %s", thread_id)


def _send_by_name(task: str, job: TurnJobJSON) -> None:
    shown = shown_kwargs(task, job["threadId"], job["runId"])
    app.send_task(task, kwargs={"job": job}, argsrepr="()", kwargsrepr=shown)


def _holder_alive(res: Resources, run_id: str) -> bool:
    try:
        return holder_alive(res.redis, run_id)
    except redis.RedisError:
        # Redis away: no beat can be read or kept; the run's compare-and-set still fences.
        logger.warning("could not read the heartbeat of run %s", run_id)
        return False


def _goes_on(res: Resources, job: AnyJob, error: BaseException) -> bool:
    """Whether a refusal only means the run moved on without this task (not failed)."""
    if not isinstance(error, StaleRunError | WorkflowError):
        return False
    record = res.store.run(job.thread_id, job.run_id)
    return record is not None and record.status != "failed"


@contextlib.contextmanager
def _stop_watch(res: Resources, run_id: str, stopped: bool) -> Iterator[tuple[StopSignal, bool]]:
    """The run's stop signal, set by this process's watcher when a stop is announced
    (``stopped``: a stop came before the task started: set from the start), and whether
    the watcher watches it."""
    token = StopSignal()
    if stopped:
        token.set()
    try:
        unwatch = process_watcher(res.redis).watch(run_id, token)
    except redis.RedisError:
        logger.warning("could not watch run %s for stops; the record is still read", run_id)
        unwatch = None
    try:
        yield token, unwatch is not None
    finally:
        if unwatch is not None:
            unwatch()


def _execute_beating(
    task: AnyTask,
    res: Resources,
    job: AnyJob,
    build: Callable[[Agent, Resources], Segment | None],
    stopped: bool = False,
) -> str:
    with _stop_watch(res, job.run_id, stopped) as (stop_signal, watched):
        return _execute_watched(task, res, job, build, stop_signal, watched)


def _execute_watched(
    task: AnyTask,
    res: Resources,
    job: AnyJob,
    build: Callable[[Agent, Resources], Segment | None],
    stop_signal: StopSignal,
    watched: bool = False,
) -> str:
    try:
        agent = _agent(task, res, job, stop_signal, watched)
        segment = build(agent, res)
        if segment is None:
            return "nothing to do"
        state = drain(segment)
        runlog.ended(task.request.id, state.status, state.attempt)
        _schedule_expiry(state, job)
        return state.status
    except FencedOutError as fenced:
        _fenced_out(job, fenced)
        return FENCED_OUT
    except RunFailedError as failed:
        # The segment already delivered its error frames and terminal; the log says why.
        runlog.failed(task.request.id, failure_of(failed.cause or failed))
        return "failed"
    except Exception as exc:
        # Refused before the segment began (stale, conflict, bad agent): tell the client.
        if not isinstance(exc, RelaylineError):
            logger.exception("task for thread %s failed", job.thread_id)
        if _goes_on(res, job, exc):
            _publish_failure(res, job, ELSEWHERE)
            return "continues elsewhere"
        failure = failure_of(exc)
        runlog.failed(task.request.id, failure)
        if isinstance(exc, AgentUnavailableError) and _store_failed_turn(res, job, failure):
            runlog.ended(task.request.id, "failed", 1)
            _publish_failure(res, job, exc)
            return "failed"  # the turn is a failed run like any other
        _publish_failure(res, job, exc)
        return "refused"


#: the outcome of a task whose run another attempt took over while it ran
FENCED_OUT = "fenced out"


def _fenced_out(job: AnyJob, fenced: FencedOutError) -> None:
    """The one line an operator reads: this task stopped, quietly, because another
    attempt owns its run now (its recovery, after this worker was taken for lost)."""
    logger.warning(
        "run %s of thread %s was taken over by another attempt; this task stops without "
        "a word to any stream (%s)",
        job.run_id,
        job.thread_id,
        fenced.fence_reason,
    )


def _store_failed_turn(res: Resources, job: AnyJob, failure: RunFailure) -> bool:
    """A new turn whose agent cannot be loaded is stored as a failed run, so that the
    thread shows why (worker.failed_turns); a continuation's run stays as it was."""
    return isinstance(job, TurnJob) and record_failed_turn(res.store, job, failure)


def _schedule_expiry(state: RunState, job: AnyJob) -> None:
    """A frontend wait with a deadline is settled by a task due at that deadline."""
    request = state.interrupt
    if state.status != "suspended" or not isinstance(request, ToolResultsRequest):
        return
    if request.expires_at is None:
        return
    expiry = ExpireJob(
        thread_id=job.thread_id,
        agent_id=job.agent_id,
        owner=job.owner,
        run_id=state.run_id,
        attempt=state.attempt,
        protocol="native",
        target=push_target(resources().settings),
    )
    expire_wait.apply_async(kwargs={"job": expiry.to_json()}, eta=request.expires_at)


@relayline_task(RUN_TURN)
def run_turn(self: Task[[TurnJobJSON], str], job: TurnJobJSON) -> str:
    turn = TurnJob.from_json(job)

    def build(agent: Agent, res: Resources) -> Segment | None:
        record = res.store.run(turn.thread_id, turn.run_id)
        if record is None:
            message = Message.user(turn.message.text, id=turn.message.id)
            return agent.stream(message, run_id=turn.run_id, frontend_tools=turn.frontend_tools)
        if record.status == "running":
            return agent.recover(run_id=turn.run_id).events()  # redelivered after a loss
        return None  # already done by an earlier delivery

    return _execute(self, turn, build)


@relayline_task(CONTINUE_RUN)
def continue_run(self: Task[[ContinueJobJSON], str], job: ContinueJobJSON) -> str:
    staged_job = ContinueJob.from_json(job)

    def build(agent: Agent, res: Resources) -> Segment | None:
        record = res.store.current_run(staged_job.thread_id)
        mine = record is not None and record.checkpoint.get("executor") == self.request.id
        # Its holder is gone (_execute checked): a redelivery takes its own run over.
        if record is not None and record.status == "running" and mine:
            return agent.recover(run_id=staged_job.run_id).events()  # redelivered after a loss
        staged = Continuation(agent, staged_job.run_id, staged_job.attempt, staged_job.answers)
        return staged.stop_after_tool_call(staged_job.stop_after_tool_call).events()

    return _execute(self, staged_job, build)


@relayline_task(EXPIRE_WAIT)
def expire_wait(self: Task[[ExpireJobJSON], str], job: ExpireJobJSON) -> str:
    """Settles the wait's pending calls with timeout errors, unless the run moved on."""
    expiry = ExpireJob.from_json(job)
    res = resources()
    try:
        with _heartbeat(res, expiry, take=not _holder_alive(res, expiry.run_id)):
            return _expire(self, res, with_segment(expiry, res.redis))
    finally:
        _release_queued(res, expiry.thread_id)


def _expire(task: AnyTask, res: Resources, expiry: ExpireJob) -> str:
    record = res.store.current_run(expiry.thread_id)
    if record is None or (record.run_id, record.attempt) != (expiry.run_id, expiry.attempt):
        return "moved on"
    try:
        agent = _agent(task, res, expiry)
    except AgentUnavailableError as exc:  # the run stays suspended; the log says why
        runlog.failed(task.request.id, failure_of(exc))
        return "refused"
    try:
        staged = agent.expire_wait()
    except (WorkflowError, RelaylineError):
        return "moved on"
    try:
        return drain(staged.events()).status
    except FencedOutError as fenced:
        _fenced_out(expiry, fenced)
        return FENCED_OUT
    except RunFailedError as failed:
        runlog.failed(task.request.id, failure_of(failed.cause or failed))
        return "failed"


@relayline_task(RECOVER_RUN)
def recover_run(self: Task[[RecoverJobJSON], str], job: RecoverJobJSON) -> str:
    """Continue a run whose worker was lost, from its last checkpoint, unless it moved on
    since the sweeper saw it (another recovery, or its own task redelivered)."""
    lost = RecoverJob.from_json(job)

    def build(agent: Agent, res: Resources) -> Segment | None:
        try:
            return agent.recover(run_id=lost.run_id, attempt=lost.attempt).events()
        except WorkflowError:
            return None

    return _execute(self, lost, build)


#: the sweeper of this worker's main process (started when the worker is ready)
_sweepers: list[Sweeper] = []
#: this worker's presence in the live workers (/readyz), from ready to shutdown
_presences: list[Presence] = []


@worker_ready.connect
def _start_sweeper(sender: object = None, **_: object) -> None:
    res = resources()
    name = getattr(sender, "hostname", None) or holder()
    presence = Presence(
        res.redis,
        str(name),
        ttl=res.settings.heartbeat_ttl,
        interval=res.settings.heartbeat_interval,
    )
    presence.start()
    _presences.append(presence)
    if app.conf.relayline_pool != "prefork":  # a prefork child runs one turn: it subscribes then
        process_watcher(res.redis).start()  # subscribed before the first turn arrives

    def send(job: RecoverJob) -> None:
        shown = shown_kwargs(RECOVER_RUN, job.thread_id, job.run_id)
        app.send_task(RECOVER_RUN, kwargs={"job": job.to_json()}, argsrepr="()", kwargsrepr=shown)

    sweeper = Sweeper(
        res.store,
        res.redis,
        send,
        push_target(res.settings),
        ttl=res.settings.heartbeat_ttl,
        interval=min(res.settings.heartbeat_interval, SWEEP_INTERVAL),
        quiet=res.settings.heartbeat_ttl - res.settings.heartbeat_interval,
    )
    sweeper.start()
    _sweepers.append(sweeper)


@worker_shutdown.connect
def _stop_sweeper(**_: object) -> None:
    while _sweepers:
        _sweepers.pop().stop()
    while _presences:
        _presences.pop().stop()
