"""Push delivery of a segment's protocol events: the shared envelope and fragment codec,
AbstractChannel and its transports, NullChannel, the Redis relay reader, a Python
consumer, and test channels (MemoryChannel, FakeChannel). The contract every channel
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
from relayline.channels.log import ActiveSegment, LogLimits, SegmentLog, active_segment, announce
from relayline.channels.mercure import MercureChannel, subscriber_token, thread_topic
from relayline.channels.null import LogOnlyChannel, NullChannel
from relayline.channels.pusher import PusherChannel, pusher_client, thread_channel
from relayline.channels.redis import HEARTBEAT, Heartbeat, RedisChannel, RedisChannelReader
from relayline.channels.testing import FakeChannel, MemoryChannel

__all__ = [
    "COMPLETED",
    "FAILED",
    "FRAGMENT",
    "HEARTBEAT",
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
    "Heartbeat",
    "LogLimits",
    "LogOnlyChannel",
    "MemoryChannel",
    "MercureChannel",
    "NullChannel",
    "PublishError",
    "PusherChannel",
    "RedisChannel",
    "RedisChannelReader",
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
