"""The segment log on a real Redis: every envelope a channel builds, terminal included,
kept per segment with its caps, and the thread's active-segment pointer."""

from __future__ import annotations

from typing import cast

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from channels import (
    ActiveSegment,
    ChannelConfigError,
    LogLimits,
    LogOnlyChannel,
    RedisChannel,
    RedisChannelReader,
    SegmentLog,
    active_segment,
    announce,
)
from channels.log import active_key, entries, log_key
from shared.events import ProtocolEvent
from shared.ids import new_stream_id
from tests.support.channel_redis import FlakyRedis
from tests.support.channel_support import State

pytestmark = pytest.mark.integration

DONE = State("thread-log")
LIMITS = LogLimits(retention=60, max_age=3600, max_events=50_000)


def _segment(client: redis.Redis, thread: str, limits: LogLimits = LIMITS) -> SegmentLog:
    return SegmentLog(client, new_stream_id(), thread, limits)


def test_the_log_holds_exactly_the_relayed_envelopes_terminal_included(
    client: FlakyRedis, name: str
) -> None:
    log = _segment(client, "thread-log")
    announce(client, "thread-log", ActiveSegment("native", log.stream_id), LIMITS)
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel = RedisChannel(client, name).into_segment(log.stream_id, log)
    for piece in ("Hel", "lo ", "wörld"):
        channel.send(ProtocolEvent("text", {"content": piece}))
    channel.completed(DONE, "thread-log")
    seen: list[ProtocolEvent] = []
    reader.listen(seen.append)

    logged = entries(client, log.stream_id)
    assert len(logged) == 4 == len(seen)
    assert [ProtocolEvent("text", {"content": p}) for p in ("Hel", "lo ", "wörld")] == seen[:3]
    assert all(f'"streamId":"{log.stream_id}"' in e for e in logged)
    assert [f'"sequence":{n},' in e for n, e in enumerate(logged)] == [True] * 4
    assert '"type":"stream.completed"' in logged[-1]
    # After the terminal: kept for the retention only, and the thread has no active one.
    assert 0 < _ttl(client, log_key(log.stream_id)) <= 60
    assert active_segment(client, "thread-log") is None


def test_a_late_terminal_never_clears_a_newer_segment(client: FlakyRedis) -> None:
    old = _segment(client, "thread-twice")
    announce(client, "thread-twice", ActiveSegment("native", old.stream_id), LIMITS)
    old_channel = LogOnlyChannel().into_segment(old.stream_id, old)
    old_channel.send(ProtocolEvent("text", {"content": "first"}))
    newer = ActiveSegment("vercel", new_stream_id())
    announce(client, "thread-twice", newer, LIMITS)  # the web enqueued the next segment

    old_channel.completed(DONE, "thread-twice")

    assert active_segment(client, "thread-twice") == newer


def test_a_segment_nobody_announced_becomes_active_with_its_first_entry(
    client: FlakyRedis,
) -> None:
    log = _segment(client, "thread-timer")
    channel = LogOnlyChannel().into_segment(log.stream_id, log)
    assert active_segment(client, "thread-timer") is None
    channel.send(ProtocolEvent("text", {"content": "settled by a timer"}))
    assert active_segment(client, "thread-timer") == ActiveSegment("native", log.stream_id)
    # While running, the hard age cap holds (XADD alone never sets a TTL).
    assert 60 < _ttl(client, log_key(log.stream_id)) <= 3600
    channel.failed(RuntimeError("boom"), "thread-timer")
    assert active_segment(client, "thread-timer") is None


def test_a_long_segment_is_capped_near_its_length_limit(client: FlakyRedis) -> None:
    limits = LogLimits(retention=60, max_age=3600, max_events=100)
    log = _segment(client, "thread-long", limits)
    channel = LogOnlyChannel().into_segment(log.stream_id, log)
    for index in range(1000):
        channel.send(ProtocolEvent("text", {"content": str(index)}))
    # Trimming is approximate (whole nodes of 100 entries): far below 1000, near 100.
    assert 100 <= cast(int, client.xlen(log_key(log.stream_id))) <= 200
    assert entries(client, log.stream_id)[-1].endswith('"data":{"content":"999"}}')


def test_a_failing_log_never_stops_the_transport(client: FlakyRedis, name: str) -> None:
    unreachable = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    log = SegmentLog(unreachable, new_stream_id(), "thread-nolog", LIMITS)
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel = RedisChannel(client, name).into_segment(log.stream_id, log)
    channel.send(ProtocolEvent("text", {"content": "still delivered"}))
    channel.completed(DONE, "thread-nolog")
    seen: list[ProtocolEvent] = []
    end = reader.listen(seen.append)
    assert seen == [ProtocolEvent("text", {"content": "still delivered"}), end]
    # The first failed append is kept (not raised) and ends logging for the segment.
    (error,) = channel.errors
    assert isinstance(error, redis.ConnectionError) and channel.log is None
    unreachable.close()


def test_a_channel_joins_its_segment_before_its_first_event(client: FlakyRedis) -> None:
    log = _segment(client, "thread-late")
    with pytest.raises(ChannelConfigError, match="32 lowercase hex"):
        LogOnlyChannel().into_segment("not-a-stream-id", log)
    started = LogOnlyChannel()
    started.send(ProtocolEvent("text", {"content": "x"}))
    with pytest.raises(ChannelConfigError, match="before its first event"):
        started.into_segment(log.stream_id, log)
    assert not client.exists(log_key(log.stream_id))
    assert not client.exists(active_key("thread-late"))


def _ttl(client: redis.Redis, key: str) -> int:
    return cast(int, client.ttl(key))
