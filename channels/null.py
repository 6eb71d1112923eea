"""NullChannel: a channel that drops everything, for segments nobody listens to."""

from __future__ import annotations

from channels.base import SegmentState
from shared.events import ProtocolEvent


class NullChannel:
    """Accepts a segment and delivers nothing: for output with no listener (a timer
    settled a wait and no push channel is configured; the result still lands in history).
    Code that always builds a channel, like the worker's delivery targets, then needs no
    "no channel" case."""

    def send(self, event: ProtocolEvent) -> None:
        pass

    def completed(self, state: SegmentState, workflow_id: str) -> None:
        pass

    def interrupted(self, state: SegmentState, workflow_id: str) -> None:
        pass

    def failed(self, error: BaseException, workflow_id: str) -> None:
        pass
