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
    if kind == "none":
        return lambda: DiscardChannel()
    raise ValueError(f"Unknown delivery target {target!r}.")


class DiscardChannel:
    """No listener to deliver to (a timer settled the run): the result lands in history."""

    def send(self, event: Any) -> None:
        pass

    def completed(self, state: Any, workflow_id: str) -> None:
        pass

    def interrupted(self, state: Any) -> None:
        pass

    def failed(self, error: BaseException, workflow_id: str) -> None:
        pass
