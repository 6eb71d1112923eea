"""The channel interface the agent pushes a segment's events and lifecycle to.

Channels live in the ``channels`` package; the core only knows this protocol, so
``shared`` never imports a transport.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from shared.events import ProtocolEvent

if TYPE_CHECKING:
    from shared.agent.spec import RunState

logger = logging.getLogger("relayline.channel")


@runtime_checkable
class Channel(Protocol):
    def send(self, event: ProtocolEvent) -> None: ...

    def completed(self, state: RunState, workflow_id: str) -> None: ...

    def interrupted(self, state: RunState) -> None: ...

    def failed(self, error: BaseException, workflow_id: str) -> None: ...


class GuardedChannel:
    """Calls a channel so that its errors never fail the run: each is logged and kept."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.errors: list[BaseException] = []

    def _guard(self, operation: str, call: object, *args: object) -> None:
        try:
            call(*args)  # type: ignore[operator]
        except Exception as exc:
            self.errors.append(exc)
            logger.warning("channel %s failed: %s", operation, exc, exc_info=exc)

    def send(self, event: ProtocolEvent) -> None:
        self._guard("send", self.channel.send, event)

    def completed(self, state: RunState, workflow_id: str) -> None:
        self._guard("completed", self.channel.completed, state, workflow_id)

    def interrupted(self, state: RunState) -> None:
        self._guard("interrupted", self.channel.interrupted, state)

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self._guard("failed", self.channel.failed, error, workflow_id)
