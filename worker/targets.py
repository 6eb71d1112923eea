"""Where a task delivers its segment: into its log only (a relay, which the web reads
from the log, or no transport), or the thread's push channel (Pusher or Mercure) as
well; always into the segment's log."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TypeVar

import redis

from relayline.channels import (
    AbstractChannel,
    LogLimits,
    LogOnlyChannel,
    MercureChannel,
    PusherChannel,
    SegmentLog,
)
from relayline.channels.keys import log_key
from relayline.channels.stream.log import LogBatching
from relayline.shared.delivery import Channel
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import Job, Target, TargetKind
from relayline.shared.settings import Settings
from relayline.worker.resources import Resources

J = TypeVar("J", bound=Job)


def _relay(target: Target, thread_id: str, res: Resources) -> Callable[[], AbstractChannel]:
    # The web relays the segment's log itself (web.dispatch.relay reads it through its
    # LogMultiplexer): no PUBLISH beside each log write, no wait for a listener, and a
    # relay whose client went away costs nothing. The target's channel name is unused.
    return LogOnlyChannel


def _pusher(target: Target, thread_id: str, res: Resources) -> Callable[[], AbstractChannel]:
    return lambda: PusherChannel.from_settings(res.settings, thread_id)


def _mercure(target: Target, thread_id: str, res: Resources) -> Callable[[], AbstractChannel]:
    return lambda: MercureChannel.from_settings(res.settings, thread_id)


def _nowhere(target: Target, thread_id: str, res: Resources) -> Callable[[], AbstractChannel]:
    return LogOnlyChannel


#: a fresh channel per segment for each target kind (Target refuses unknown kinds)
CHANNELS: Mapping[TargetKind, Callable[[Target, str, Resources], Callable[[], AbstractChannel]]] = {
    "relay": _relay,
    "pusher": _pusher,
    "mercure": _mercure,
    "none": _nowhere,
}


def with_segment(job: J, client: redis.Redis, *, logged: bool | None = None) -> J:
    """``job`` naming its segment: the one the web announced, or a new one for a job
    nobody announced (timers, recoveries), which its first log entry announces.

    A later delivery of a job whose segment already has entries (the first delivery's
    worker was lost mid-answer) writes a new segment too: its sequences start again at
    0, and readers of the old one learn it was replaced instead of reading a torn log.
    ``logged``: whether the announced segment's log exists, when the caller read it
    already (in its own round trip); else it is read here."""
    if job.segment_id is not None:
        if logged is None:
            logged = bool(client.exists(log_key(job.segment_id)))
        if not logged:
            return job
    return dataclasses.replace(job, segment_id=new_segment_id())


def channel_factory(
    target: Target, thread_id: str, res: Resources, segment_id: str, protocol: str = "native"
) -> Callable[[], Channel]:
    """Fresh channels for ``target`` that serve the segment ``segment_id`` (events in
    ``protocol``) and write its log (every delivery does, Pusher and Mercure as well as
    the relay)."""
    limits = LogLimits.from_settings(res.settings)
    batching = LogBatching.from_settings(res.settings)
    log = SegmentLog(res.redis, segment_id, thread_id, limits, protocol, batching=batching)
    build = CHANNELS[target.kind](target, thread_id, res)
    return lambda: build().into_segment(segment_id, log)


def push_target(settings: Settings) -> Target:
    """Where output nobody asked for goes (a timer settling a wait): the configured push
    channel, or nowhere (the result still lands in history)."""
    if settings.delivery == "pusher":
        return Target("pusher")
    if settings.delivery == "mercure":
        return Target("mercure")
    if settings.pusher.configured:
        return Target("pusher")
    if settings.mercure.configured:
        return Target("mercure")
    return Target("none")
