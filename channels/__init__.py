"""Delivery of a segment's protocol events: the shared envelope and fragment codec,
AbstractChannel and its push transports (Pusher, Mercure), NullChannel and
LogOnlyChannel, a Python consumer, and test channels (MemoryChannel, FakeChannel).
``stream`` holds the segment log (writer, group commit, the web's multiplexed reader,
splice); ``runs`` the Redis side of run coordination (stop signals, queued turns, the
backlog, heartbeats); ``keys`` names every Redis key. The contract every channel
keeps is documented in ``relayline.shared.delivery``.

Imports only ``shared``'s small wire types (never Flask, Celery or SQLAlchemy).
"""

from relayline.channels.base import AbstractChannel, CallbackChannel, SegmentState
from relayline.channels.consumer import Consumer
from relayline.channels.envelope import (
    COMPLETED,
    FAILED,
    FRAGMENT,
    INTERRUPTED,
    TERMINALS,
    Envelope,
    is_terminal,
)
from relayline.channels.errors import (
    ChannelClosedError,
    ChannelConfigError,
    ChannelError,
    ChannelLimitError,
    ChannelReadError,
    EnvelopeError,
    GapError,
    PublishError,
    SegmentReplacedError,
)
from relayline.channels.fragments import Fragment
from relayline.channels.mercure import MercureChannel, subscriber_token, thread_topic
from relayline.channels.null import LogOnlyChannel, NullChannel
from relayline.channels.pusher import PusherChannel, pusher_client, thread_channel
from relayline.channels.stream.log import (
    ActiveSegment,
    LogLimits,
    SegmentLog,
    active_segment,
    announce,
)
from relayline.channels.testing import FakeChannel, MemoryChannel

__all__ = [
    "COMPLETED",
    "FAILED",
    "FRAGMENT",
    "INTERRUPTED",
    "TERMINALS",
    "AbstractChannel",
    "ActiveSegment",
    "CallbackChannel",
    "ChannelClosedError",
    "ChannelConfigError",
    "ChannelError",
    "ChannelLimitError",
    "ChannelReadError",
    "Consumer",
    "Envelope",
    "EnvelopeError",
    "FakeChannel",
    "Fragment",
    "GapError",
    "LogLimits",
    "LogOnlyChannel",
    "MemoryChannel",
    "MercureChannel",
    "NullChannel",
    "PublishError",
    "PusherChannel",
    "SegmentLog",
    "SegmentReplacedError",
    "SegmentState",
    "active_segment",
    "announce",
    "is_terminal",
    "pusher_client",
    "subscriber_token",
    "thread_channel",
    "thread_topic",
]
