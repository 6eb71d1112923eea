"""Where a task delivers its segment: the relay channel of one request, the thread's
push channel (Pusher or Mercure), or nowhere (NullChannel)."""

from __future__ import annotations

from collections.abc import Callable

from channels import MercureChannel, NullChannel, PusherChannel, RedisChannel
from shared.delivery import Channel
from shared.jobs import Target
from shared.settings import Settings
from worker.resources import Resources

#: seconds a relayed segment waits for the web process's subscription before publishing
AWAIT_LISTENER = 5.0


def channel_factory(target: Target, thread_id: str, res: Resources) -> Callable[[], Channel]:
    kind = target.kind
    if kind == "relay":
        name = target.channel
        assert name is not None  # a relay Target always names its channel
        return lambda: RedisChannel(res.redis, name, await_listener=AWAIT_LISTENER)
    if kind == "pusher":
        return lambda: PusherChannel.from_settings(res.settings, thread_id)
    if kind == "mercure":
        return lambda: MercureChannel.from_settings(res.settings, thread_id)
    if kind == "none":
        return NullChannel
    raise ValueError(f"Unknown delivery target {target!r}.")


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
