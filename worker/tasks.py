"""The tasks: run a new turn, continue a suspended run. Arguments are JSON only.

Both are idempotent under redelivery: a task that finds its own run still ``running``
(the worker was lost) takes it over from the last checkpoint, so completed backend
tools never run twice; a task whose run moved on publishes the protocol's error frames
and ``stream.failed`` so that no client waits for output that will never come.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from shared.agent import Agent, Continuation
from shared.agent.segment import drain
from shared.agent.spec import RunState
from shared.errors import RelaylineError, RunFailedError, WorkflowError
from shared.interrupts import ToolResultsRequest
from shared.messages import Message
from shared.protocols import adapter_factory, failure_frames
from shared.tools import FrontendTool
from worker.app import LEASE_SECONDS, app
from worker.resources import Resources, resources
from worker.targets import channel_factory, push_target

logger = logging.getLogger("relayline.worker")


def _agent(task: Task, res: Resources, job: dict[str, Any]) -> Agent:
    agent = Agent(
        job["threadId"],
        res.registry.spec(job.get("agentId", "default")),
        res.store,
        owner=job.get("owner", "anonymous"),
        lease_seconds=LEASE_SECONDS,
        executor=task.request.id,
    )
    agent.set_stream_adapter(adapter_factory(job["protocol"], job["threadId"], job.get("seed", {})))
    agent.set_channel(channel_factory(job["target"], job["threadId"], res))
    return agent


def _publish_failure(res: Resources, job: dict[str, Any], error: BaseException) -> None:
    """Deliver error frames and ``stream.failed`` for a failure the run did not report."""
    channel = channel_factory(job["target"], job["threadId"], res)()
    try:
        for frame in failure_frames(
            job["protocol"], job["threadId"], job.get("seed", {}), error, started=False
        ):
            channel.send(frame)
        channel.failed(error, job["threadId"])
    except Exception:
        logger.exception("could not publish the failure of thread %s", job["threadId"])


def _execute(task: Task, job: dict[str, Any], build: Any) -> str:
    res = resources()
    try:
        agent = _agent(task, res, job)
        segment = build(agent, res)
        if segment is None:
            return "nothing to do"
        state = drain(segment)
        _schedule_expiry(state, job)
        return state.status
    except RunFailedError:
        return "failed"  # the segment already delivered its error frames and terminal
    except Exception as exc:
        # Refused before the segment began (stale, conflict, bad agent): tell the client.
        if not isinstance(exc, RelaylineError):
            logger.exception("task for thread %s failed", job.get("threadId"))
        _publish_failure(res, job, exc)
        return "refused"


def _schedule_expiry(state: RunState, job: dict[str, Any]) -> None:
    """A frontend wait with a deadline is settled by a task due at that deadline."""
    request = state.interrupt
    if state.status != "suspended" or not isinstance(request, ToolResultsRequest):
        return
    if request.expires_at is None:
        return
    expire_wait.apply_async(
        kwargs={
            "job": {
                "threadId": job["threadId"],
                "agentId": job.get("agentId", "default"),
                "owner": job.get("owner", "anonymous"),
                "runId": state.run_id,
                "attempt": state.attempt,
                "protocol": "native",
                "seed": {},
                "target": push_target(resources().settings),
            }
        },
        eta=request.expires_at,
    )


@app.task(name="relayline.run_turn", bind=True)
def run_turn(self: Task, job: dict[str, Any]) -> str:
    """job: threadId, agentId, owner, runId, message {id, text}, frontendTools,
    protocol, seed, target."""

    def build(agent: Agent, res: Resources) -> Any:
        record = res.store.run(job["threadId"], job["runId"])
        if record is None:
            tools = [
                FrontendTool(
                    t["name"],
                    t.get("description", ""),
                    t["parameters"],
                    t.get("requiresApproval", False),
                )
                for t in job.get("frontendTools", ())
            ]
            message = Message.user(job["message"]["text"], id=job["message"]["id"])
            return agent.stream(message, run_id=job["runId"], frontend_tools=tools)
        if record.status == "running":
            return agent.recover(run_id=job["runId"]).events()  # redelivered after a loss
        return None  # already done by an earlier delivery

    return _execute(self, job, build)


@app.task(name="relayline.continue_run", bind=True)
def continue_run(self: Task, job: dict[str, Any]) -> str:
    """job: threadId, agentId, owner, runId, attempt, answers, stopAfterToolCall,
    protocol, seed, target."""

    def build(agent: Agent, res: Resources) -> Any:
        record = res.store.current_run(job["threadId"])
        mine = record is not None and record.checkpoint.get("executor") == self.request.id
        if record is not None and record.status == "running" and mine:
            return agent.recover(run_id=job["runId"]).events()  # redelivered after a loss
        staged = Continuation(agent, job["runId"], job["attempt"], job["answers"])
        return staged.stop_after_tool_call(bool(job.get("stopAfterToolCall"))).events()

    return _execute(self, job, build)


@app.task(name="relayline.expire_wait", bind=True)
def expire_wait(self: Task, job: dict[str, Any]) -> str:
    """job: threadId, agentId, owner, runId, attempt, protocol, seed, target. Settles the
    wait's pending calls with timeout errors, unless the run moved on meanwhile."""
    res = resources()
    record = res.store.current_run(job["threadId"])
    if record is None or (record.run_id, record.attempt) != (job["runId"], job["attempt"]):
        return "moved on"
    agent = _agent(self, res, job)
    try:
        staged = agent.expire_wait()
    except (WorkflowError, RelaylineError):
        return "moved on"
    try:
        return drain(staged.events()).status
    except RunFailedError:
        return "failed"
