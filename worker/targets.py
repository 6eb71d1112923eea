"""Where a task delivers its segment: the relay channel of one request, or the thread's
push channel (Pusher or Mercure)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels import RedisChannel
from shared.delivery import Channel
from worker.resources import Resources

#: seconds a relayed segment waits for the web process's subscription before publishing
AWAIT_LISTENER = 5.0


def channel_factory(
    target: dict[str, Any], thread_id: str, res: Resources
) -> Callable[[], Channel]:
    kind = target.get("kind")
    if kind == "relay":
        name = target["channel"]
        return lambda: RedisChannel(res.redis, name, await_listener=AWAIT_LISTENER)
    raise ValueError(f"Unknown delivery target {target!r}.")
