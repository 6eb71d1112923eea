"""Errors of the channels package, with their own root so ``channels`` stays liftable.

Hierarchy::

    ChannelError                       root; ``message`` is the text to act on
    ├── ChannelConfigError (ValueError)  limits or settings a channel cannot work with
    ├── ChannelLimitError (ValueError)   an event cannot fit the byte limits, even fragmented
    ├── ChannelClosedError               a call after the segment's terminal
    ├── PublishError                     the transport refused or failed a delivery
    ├── ChannelReadError                 a reader gave up: timeout, late start, segment switch
    │   ├── SegmentReplacedError         a newer segment of the run took over (its recovery)
    │   └── ClientTooSlowError           the client left more unsent than its byte budget
    └── EnvelopeError                    a frame is not a valid envelope or fragment
        └── GapError                     a consumer found missing or conflicting events
"""

from __future__ import annotations


class ChannelError(Exception):
    """Root of every channel error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ChannelConfigError(ChannelError, ValueError):
    """A channel was configured with limits it cannot work with; nothing was delivered."""


class ChannelLimitError(ChannelError, ValueError):
    """An event cannot be delivered within the channel's byte limits."""


class ChannelClosedError(ChannelError):
    """The channel already sent its terminal: build a fresh channel for each segment."""


class PublishError(ChannelError):
    """A delivery failed. ``retryable`` says whether the same call could succeed later
    (a lost connection) or not (a refused configuration); the channel never retries."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class ChannelReadError(ChannelError):
    """A reader could not relay a whole segment."""


class SegmentReplacedError(ChannelReadError):
    """The segment being read ended without its terminal because a newer one of the
    same run took over (the run was recovered after its worker was lost). ``newer``:
    that segment's id, where a reader resumes."""

    def __init__(self, message: str, *, newer: str | None = None) -> None:
        super().__init__(message)
        self.newer = newer


class EnvelopeError(ChannelError):
    """A frame is not a valid channel envelope."""


class GapError(EnvelopeError):
    """Events are missing, conflicting or over the buffer limits; ``message`` is the
    reason a browser consumer would report (``'Missing channel events'``, ...)."""


class ClientTooSlowError(ChannelReadError):
    """A relayed client stopped reading and what waits unsent for it passed its byte
    budget: its response is dropped (the log is durable: the client resumes from the
    last event it received)."""
