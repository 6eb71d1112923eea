"""Where a task delivers its segment: the relay channel of one request, the thread's
push channel (Pusher or Mercure), or nowhere (NullChannel)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from channels import MercureChannel, NullChannel, PusherChannel, RedisChannel
from shared.delivery import Channel
from shared.jobs import Target, TargetKind
from shared.settings import Settings
from worker.resources import Resources

#: seconds a relayed segment waits for the web process's subscription before publishing
AWAIT_LISTENER = 5.0


def _relay(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    name = target.channel
    assert name is not None  # a relay Target always names its channel
    return lambda: RedisChannel(res.redis, name, await_listener=AWAIT_LISTENER)


def _pusher(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    return lambda: PusherChannel.from_settings(res.settings, thread_id)


def _mercure(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    return lambda: MercureChannel.from_settings(res.settings, thread_id)


def _nowhere(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    return NullChannel


#: a fresh channel per segment for each target kind (Target refuses unknown kinds)
CHANNELS: Mapping[TargetKind, Callable[[Target, str, Resources], Callable[[], Channel]]] = {
    "relay": _relay,
    "pusher": _pusher,
    "mercure": _mercure,
    "none": _nowhere,
}


def channel_factory(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    return CHANNELS[target.kind](target, thread_id, res)


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
