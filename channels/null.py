"""NullChannel drops everything; LogOnlyChannel only writes the segment log: for segments
nobody listens to live."""

from __future__ import annotations

from relayline.channels.base import AbstractChannel, SegmentState
from relayline.shared.events import ProtocolEvent


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


class LogOnlyChannel(AbstractChannel):
    """Delivers to no transport but writes the segment's log (``into_segment``): output
    nobody listens to live, which a reload or a late viewer can still read."""

    def deliver(self, batch: str) -> None:
        pass
