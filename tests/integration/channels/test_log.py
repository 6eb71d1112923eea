"""The segment log on a real Redis: every envelope a channel builds, terminal included,
kept per segment with its caps, and the thread's active-segment pointer."""

from __future__ import annotations

import time
from typing import cast

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from relayline.channels import (
    ActiveSegment,
    ChannelConfigError,
    LogLimits,
    LogOnlyChannel,
    MemoryChannel,
    SegmentLog,
    active_segment,
    announce,
)
from relayline.channels.envelope import Envelope
from relayline.channels.keys import active_key, log_key
from relayline.channels.stream.log import LogBatching, LogReader, entries, split_entry
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from tests.support.channel_redis import FlakyRedis
from tests.support.channel_support import State

pytestmark = pytest.mark.integration

DONE = State("thread-log")
LIMITS = LogLimits(retention=60, max_age=3600, max_events=50_000)


def _segment(client: redis.Redis, thread: str, limits: LogLimits = LIMITS) -> SegmentLog:
    return SegmentLog(client, new_segment_id(), thread, limits)


def test_the_log_holds_exactly_the_relayed_envelopes_terminal_included(
    client: FlakyRedis,
) -> None:
    log = _segment(client, "thread-log")
    announce(client, "thread-log", ActiveSegment("native", log.segment_id), LIMITS)
    channel = MemoryChannel().into_segment(log.segment_id, log)
    for piece in ("Hel", "lo ", "wörld"):
        channel.send(ProtocolEvent("text", {"content": piece}))
    channel.completed(DONE, "thread-log")
    delivered = channel.events()

    logged = entries(client, log.segment_id)
    assert len(logged) == 4 == len(delivered)
    assert [Envelope.parse(e) for e in logged] == delivered
    assert all(f'"streamId":"{log.segment_id}"' in e for e in logged)
    assert [f'"sequence":{n},' in e for n, e in enumerate(logged)] == [True] * 4
    assert '"type":"stream.completed"' in logged[-1]
    # After the terminal: kept for the retention only, and the thread has no active one.
    assert 0 < _ttl(client, log_key(log.segment_id)) <= 60
    assert active_segment(client, "thread-log") is None


def test_a_late_terminal_never_clears_a_newer_segment(client: FlakyRedis) -> None:
    old = _segment(client, "thread-twice")
    announce(client, "thread-twice", ActiveSegment("native", old.segment_id), LIMITS)
    old_channel = LogOnlyChannel().into_segment(old.segment_id, old)
    old_channel.send(ProtocolEvent("text", {"content": "first"}))
    newer = ActiveSegment("vercel", new_segment_id())
    announce(client, "thread-twice", newer, LIMITS)  # the web enqueued the next segment

    old_channel.completed(DONE, "thread-twice")

    assert active_segment(client, "thread-twice") == newer


def test_a_segment_nobody_announced_becomes_active_with_its_first_entry(
    client: FlakyRedis,
) -> None:
    log = _segment(client, "thread-timer")
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    assert active_segment(client, "thread-timer") is None
    channel.send(ProtocolEvent("text", {"content": "settled by a timer"}))
    assert active_segment(client, "thread-timer") == ActiveSegment("native", log.segment_id)
    # While running, the hard age cap holds (XADD alone never sets a TTL).
    assert 60 < _ttl(client, log_key(log.segment_id)) <= 3600
    channel.failed(RuntimeError("boom"), "thread-timer")
    assert active_segment(client, "thread-timer") is None


def test_a_long_segment_is_capped_near_its_length_limit(client: FlakyRedis) -> None:
    limits = LogLimits(retention=60, max_age=3600, max_events=100)
    log = SegmentLog(
        client, new_segment_id(), "thread-long", limits, batching=LogBatching(60, 10**6, 10)
    )
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    for index in range(1000):
        channel.send(ProtocolEvent("text", {"content": str(index)}))
    channel.completed(DONE, "thread-long")
    # The cap counts envelopes and trims whole entries: the newest 100 and a few more.
    kept = entries(client, log.segment_id)
    assert 100 <= len(kept) <= 110
    assert kept[-2].endswith('"data":{"content":"999"}}')


def test_envelopes_close_together_share_an_entry_and_keep_their_own_sequences(
    client: FlakyRedis,
) -> None:
    log = SegmentLog(
        client, new_segment_id(), "thread-batch", LIMITS, batching=LogBatching(60, gather=60)
    )
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "alone"}))
    # The first after a quiet spell goes out at once: no added latency for it.
    assert cast(int, client.xlen(log_key(log.segment_id))) == 1
    for piece in ("a", "b\nc", "d"):
        channel.send(ProtocolEvent("text", {"content": piece}))
    assert cast(int, client.xlen(log_key(log.segment_id))) == 1  # held: within the linger
    channel.completed(DONE, "thread-batch")  # the terminal takes what waits, at once
    assert cast(int, client.xlen(log_key(log.segment_id))) == 2
    envelopes = [Envelope.parse(e) for e in entries(client, log.segment_id)]
    assert [e.sequence for e in envelopes] == [0, 1, 2, 3, 4]
    assert [e.data for e in envelopes[:4]] == [{"content": p} for p in ("alone", "a", "b\nc", "d")]
    assert envelopes[-1].is_terminal and active_segment(client, "thread-batch") is None


def test_an_entry_holds_at_most_its_cap_of_envelopes(client: FlakyRedis) -> None:
    log = SegmentLog(
        client,
        new_segment_id(),
        "thread-cap",
        LIMITS,
        batching=LogBatching(60, 10**6, 3, gather=60),
    )
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    for index in range(7):
        channel.send(ProtocolEvent("text", {"content": str(index)}))
    rows = cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(log_key(log.segment_id)))
    assert [len(split_entry(f[b"e"])) for _, f in rows] == [1, 3, 3]


def test_a_lone_held_envelope_is_written_within_the_linger_without_another_append(
    client: FlakyRedis,
) -> None:
    linger = 0.2
    log = SegmentLog(client, new_segment_id(), "thread-lone", LIMITS, batching=LogBatching(linger))
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "first"}))
    ((first_id, _),) = cast(list[tuple[bytes, object]], client.xrange(log_key(log.segment_id)))
    held = time.monotonic()
    channel.send(ProtocolEvent("text", {"content": "before a long tool call"}))
    # Nothing else is appended: the flusher alone must write it. XREAD waits for it.
    reply = cast(
        list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]],
        client.xread({log_key(log.segment_id): first_id}, block=5000),
    )
    waited = time.monotonic() - held
    assert reply, "the held envelope was never written"
    ((_, rows),) = reply
    assert [Envelope.parse(t).data for t in split_entry(rows[0][1][b"e"])] == [
        {"content": "before a long tool call"}
    ]
    assert waited < linger + 0.5


def test_a_failed_write_by_the_flusher_stops_logging_at_the_next_append(
    client: FlakyRedis,
) -> None:
    log = SegmentLog(client, new_segment_id(), "thread-lost", LIMITS, batching=LogBatching(0.05))
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "written"}))
    unreachable = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    log.client = unreachable  # the flusher's write of the next one fails
    channel.send(ProtocolEvent("text", {"content": "held, then lost"}))
    reached = time.monotonic() + 5
    while log._error is None:  # the flusher's failed attempt, bounded by a deadline
        assert time.monotonic() < reached
        time.sleep(0.01)
    channel.send(ProtocolEvent("text", {"content": "after the failure"}))
    (error,) = channel.errors
    assert isinstance(error, redis.ConnectionError) and channel.log is None
    assert len(entries(client, log.segment_id)) == 1
    unreachable.close()


def test_the_reader_splits_entries_and_checks_cursors_by_envelope(client: FlakyRedis) -> None:
    log = SegmentLog(
        client, new_segment_id(), "thread-read", LIMITS, batching=LogBatching(60, gather=60)
    )
    channel = LogOnlyChannel().into_segment(log.segment_id, log)
    for piece in ("a", "b", "c"):
        channel.send(ProtocolEvent("text", {"content": piece}))
    channel.completed(DONE, "thread-read")  # entries: [0], [1, 2, 3]
    assert not LogReader(client, log.segment_id, after=1).finished_at_cursor()
    assert LogReader(client, log.segment_id, after=2).finished_at_cursor()
    LogReader(client, log.segment_id, after=-1).check()
    reader = LogReader(client, log.segment_id, after=1)
    got = [e.sequence for e in reader.envelopes(wait=1, timeout=5) if e is not None]
    assert got == [2, 3]


def test_a_failing_log_never_stops_the_transport(client: FlakyRedis) -> None:
    unreachable = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    log = SegmentLog(unreachable, new_segment_id(), "thread-nolog", LIMITS)
    channel = MemoryChannel().into_segment(log.segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "still delivered"}))
    channel.completed(DONE, "thread-nolog")
    assert [e.type for e in channel.events()] == ["text", "stream.completed"]
    assert channel.events()[0].data == {"content": "still delivered"}
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
        started.into_segment(log.segment_id, log)
    assert not client.exists(log_key(log.segment_id))
    assert not client.exists(active_key("thread-late"))


def _ttl(client: redis.Redis, key: str) -> int:
    return cast(int, client.ttl(key))
