"""The Python Consumer's recovery against a real segment log: holes filled
from ``relayline.channels.stream.log.kept_after`` (what the web's envelopes route
answers), asked at once, then with backoff on the consumer's own clock, at most
``recover_attempts`` times without progress; a whole logged event replaces the
fragments that did arrive."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from relayline.channels import Consumer, Envelope, LogLimits, MemoryChannel, SegmentLog
from relayline.channels.keys import log_key
from relayline.channels.stream.log import entries, kept_after
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from tests.support.channel_support import State

pytestmark = pytest.mark.integration

THREAD = "thread-recovery"
LIMITS = LogLimits(retention=60, max_age=3600, max_events=50_000)


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


class LogRecovery:
    """``recover`` read straight from the log, counting its asks."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.asks: list[int] = []

    def __call__(self, segment_id: str, after: int) -> list[Any]:
        self.asks.append(after)
        kept = kept_after(self.client, segment_id, after, 1000)
        return [json.loads(text) for text in kept.envelopes]


def pushed(client: redis.Redis, texts: list[str], budget: int | None = None) -> Any:
    """A segment sent through a MemoryChannel (the transport) that logs to Redis."""
    segment_id = new_segment_id()
    channel = MemoryChannel(budget=budget).into_segment(
        segment_id, SegmentLog(client, segment_id, THREAD, LIMITS)
    )
    for text in texts:
        channel.send(ProtocolEvent("text", {"content": text}))
    channel.completed(State(THREAD), THREAD)
    return segment_id, channel.frames()


def logged(client: redis.Redis, segment_id: str) -> list[Envelope]:
    return [Envelope.parse(text) for text in entries(client, segment_id)]


def test_a_dropped_fragment_is_replaced_by_the_logged_event(client: redis.Redis) -> None:
    segment_id, frames = pushed(client, ["a", "ü" * 400, "c"], budget=300)
    fragments = [f for f in frames if f["type"] == "stream.fragment"]
    assert len(fragments) > 2
    recover = LogRecovery(client)
    delivered: list[Envelope] = []
    consumer = Consumer(delivered.append, recover=recover)
    for frame in frames:
        if frame is not fragments[1]:
            consumer.feed(frame)
    assert delivered == logged(client, segment_id)
    assert recover.asks == [0]  # one ask, after the first delivered event


def test_asks_back_off_on_the_clock_and_stop_after_the_attempts(client: redis.Redis) -> None:
    segment_id, frames = pushed(client, ["a", "b", "c", "d"])
    client.delete(log_key(segment_id))
    SegmentLog(client, segment_id, THREAD, LIMITS).append(json.dumps(frames[0]))
    recover, clock, gaps = LogRecovery(client), Clock(), list[str]()
    consumer = Consumer(
        on_gap=gaps.append,
        gap_timeout=60,
        clock=clock,
        recover=recover,
        recover_attempts=3,
        recover_backoff=1.0,
    )
    consumer.feed(frames[0])
    consumer.feed(frames[2])  # 1 is missing, and the log does not hold it
    assert recover.asks == [0]  # at once
    consumer.poll()
    assert recover.asks == [0]  # the next ask is 1 s away
    clock.now += 1.0
    consumer.poll()
    assert recover.asks == [0, 0]
    clock.now += 1.9
    consumer.poll()
    assert recover.asks == [0, 0]  # then 2 s
    clock.now += 0.1
    consumer.poll()
    assert recover.asks == [0, 0, 0]
    clock.now += 40
    consumer.poll()
    assert recover.asks == [0, 0, 0] and gaps == []  # no fourth ask: the deadline decides
    clock.now += 20
    consumer.poll()
    assert gaps == ["Missing channel events"]


def test_the_log_catching_up_fills_the_hole_on_a_later_ask(client: redis.Redis) -> None:
    segment_id, frames = pushed(client, ["a", "b", "c"])
    full = logged(client, segment_id)
    client.delete(log_key(segment_id))
    log = SegmentLog(client, segment_id, THREAD, LIMITS)
    log.append(json.dumps(frames[0]))
    recover, clock, delivered = LogRecovery(client), Clock(), list[Envelope]()
    consumer = Consumer(delivered.append, clock=clock, recover=recover, recover_backoff=1.0)
    consumer.feed(frames[0])
    consumer.feed(frames[3])  # the terminal; 1 and 2 are missing
    assert [e.sequence for e in delivered] == [0]
    for frame in frames[1:]:
        log.append(json.dumps(frame), terminal=frame["type"] == "stream.completed")
    clock.now += 1.0
    consumer.poll()
    assert delivered == full
    assert recover.asks == [0, 0]


def test_a_log_that_cannot_supply_the_hole_is_a_gap(client: redis.Redis) -> None:
    segment_id, frames = pushed(client, ["a", "b", "c"])
    client.delete(log_key(segment_id))
    gaps: list[str] = []
    consumer = Consumer(on_gap=gaps.append, recover=LogRecovery(client))
    consumer.feed(frames[0])
    consumer.feed(frames[2])
    assert gaps == ["Missing channel events"] and consumer.closed
