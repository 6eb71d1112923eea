"""LogMultiplexer on a real Redis: one reader of many segment logs, woken by a new
subscription, pausing a full subscription's log until it drains, closed cleanly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import cast

import pytest
import redis

from relayline.channels import ChannelReadError, LogLimits, LogOnlyChannel, SegmentLog
from relayline.channels.stream.log import LogBatching
from relayline.channels.stream.reader import BLOCK_MS, TAKE_CHARS, LogMultiplexer, Subscription
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from tests.support.channel_support import State

pytestmark = pytest.mark.integration


@pytest.fixture
def logs(client: redis.Redis) -> Iterator[LogMultiplexer]:
    built = LogMultiplexer(client)
    yield built
    built.close()


def _segment(
    client: redis.Redis, thread: str, contents: list[str], *, end: bool = True, batch: int = 1000
) -> str:
    segment_id = new_segment_id()
    log = SegmentLog(
        client, segment_id, thread, LogLimits(), batching=LogBatching(60, 10**6, batch)
    )
    channel = LogOnlyChannel().into_segment(segment_id, log)
    for content in contents:
        channel.send(ProtocolEvent("text", {"content": content}))
    if end:
        channel.completed(State(thread), thread)
    return segment_id


def _read_all(subscription: Subscription) -> list[int]:
    sequences: list[int] = []
    for batch in subscription.batches(wait=5, timeout=10):
        assert batch is not None, "a heartbeat: the reader missed the log"
        sequences += [s.sequence for s in batch]
    return sequences


def _blocked(client: redis.Redis, logs: LogMultiplexer, deadline: float = 10.0) -> None:
    """Until the reader's connection is blocked in an XREAD (what it reads is settled)."""
    until = time.monotonic() + deadline
    while True:
        for entry in cast(list[dict[str, str]], client.client_list()):
            if entry.get("name") == logs.connection_name and "b" in entry.get("flags", ""):
                return
        assert time.monotonic() < until, "the reader never blocked"
        time.sleep(0.005)  # polling Redis's view of the connection, bounded


def test_many_subscriptions_each_read_their_own_segment_in_order(
    client: redis.Redis, logs: LogMultiplexer
) -> None:
    segments = [_segment(client, f"t{n}", [f"{n}-{i}" for i in range(20)]) for n in range(40)]
    subscriptions = [logs.subscribe(s) for s in segments]
    for subscription in subscriptions:
        assert _read_all(subscription) == list(range(21))  # 20 events and the terminal
        subscription.close()
    # One connection of the reader's own, whatever the number of subscriptions.
    names = [e.get("name") for e in cast(list[dict[str, str]], client.client_list())]
    assert names.count(logs.connection_name) == 1


def test_a_cursor_skips_what_the_client_holds(client: redis.Redis, logs: LogMultiplexer) -> None:
    segment_id = _segment(client, "t-cursor", ["a", "b", "c", "d"], batch=3)
    with logs.subscribe(segment_id, after=1) as subscription:
        assert _read_all(subscription) == [2, 3, 4]


def test_a_new_subscription_wakes_the_blocked_reader(client: redis.Redis) -> None:
    # A tick longer than a BLOCK: only the wake can end the reader's XREAD early.
    logs = LogMultiplexer(client, tick=2 * BLOCK_MS / 1000)
    idle = logs.subscribe(new_segment_id())  # a segment whose job has not started
    _blocked(client, logs)
    ready = _segment(client, "t-wake", ["now"])
    began = time.monotonic()
    with logs.subscribe(ready) as subscription:
        assert _read_all(subscription) == [0, 1]
    # Well before the reader's BLOCK would have run out by itself.
    assert time.monotonic() - began < BLOCK_MS / 1000 / 2
    idle.close()
    logs.close()


def test_a_waiting_response_gets_its_heartbeats_and_its_silence_timeout_from_the_tick(
    client: redis.Redis,
) -> None:
    logs = LogMultiplexer(client, tick=0.05)
    try:
        with logs.subscribe(new_segment_id()) as subscription:  # nothing is ever written
            batches = subscription.batches(wait=0.2, timeout=0.7)
            began = time.monotonic()
            assert next(batches) is None and next(batches) is None
            # Two heartbeats 0.2 s apart, never early (late by a tick, or a busy machine).
            assert 0.4 <= time.monotonic() - began < 3
            with pytest.raises(ChannelReadError, match=r"silent for 0\.7 seconds"):
                while True:
                    assert next(batches) is None
            assert 0.7 <= time.monotonic() - began < 3
    finally:
        logs.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_reader_that_stops_ends_every_waiting_response(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = LogMultiplexer(client)
    subscription = logs.subscribe(new_segment_id())
    _blocked(client, logs)
    # Fault injection: the reader thread meets what no handler catches (as a greenlet
    # killed under gevent would).

    def stop(*_: object) -> None:
        raise SystemExit

    monkeypatch.setattr(logs, "_read", stop)
    logs.wake()
    with pytest.raises(ChannelReadError, match="reader stopped"):
        next(subscription.batches(wait=60, timeout=60))
    logs.close()


def test_a_live_segment_arrives_as_it_is_written(client: redis.Redis, logs: LogMultiplexer) -> None:
    segment_id = new_segment_id()
    log = SegmentLog(client, segment_id, "t-live", LogLimits(), batching=LogBatching(0))
    channel = LogOnlyChannel().into_segment(segment_id, log)
    with logs.subscribe(segment_id) as subscription:
        batches = subscription.batches(wait=5, timeout=10)
        for n in range(5):
            channel.send(ProtocolEvent("text", {"content": str(n)}))
            batch = next(batches)
            assert batch is not None and [s.sequence for s in batch] == [n]
        channel.completed(State("t-live"), "t-live")
        assert [s.type for s in next(batches) or []] == ["stream.completed"]


def test_a_second_reader_of_a_log_already_read_gets_it_from_the_start(
    client: redis.Redis, logs: LogMultiplexer
) -> None:
    segment_id = new_segment_id()
    log = SegmentLog(client, segment_id, "t-two", LogLimits(), batching=LogBatching(0))
    channel = LogOnlyChannel().into_segment(segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "first"}))
    with logs.subscribe(segment_id) as first:
        batches = first.batches(wait=5, timeout=10)
        assert [s.sequence for s in next(batches) or []] == [0]
        channel.send(ProtocolEvent("text", {"content": "second"}))
        assert [s.sequence for s in next(batches) or []] == [1]
        with logs.subscribe(segment_id) as second:
            channel.completed(State("t-two"), "t-two")
            assert _read_all(second) == [0, 1, 2]
        assert [s.sequence for s in next(batches) or []] == [2]


def test_a_full_subscription_pauses_its_log_until_it_drains(client: redis.Redis) -> None:
    logs = LogMultiplexer(client, queue_limit=10)
    try:
        segment_id = _segment(client, "t-slow", [str(n) for n in range(600)], batch=1)
        with logs.subscribe(segment_id) as slow:
            _blocked(client, logs)  # it read once (100 entries), then left the log out
            assert slow._pending == 100 and slow._stalled
            # Draining resumes the reading; nothing was lost meanwhile.
            assert _read_all(slow) == list(range(601))
    finally:
        logs.close()


def test_closing_ends_every_subscription_and_refuses_new_ones(client: redis.Redis) -> None:
    logs = LogMultiplexer(client)
    open_one = logs.subscribe(new_segment_id())
    _blocked(client, logs)
    logs.close()
    with pytest.raises(ChannelReadError, match="closed"):
        list(open_one.batches(wait=5, timeout=10))
    with pytest.raises(ChannelReadError, match="closed"):
        logs.subscribe(new_segment_id())
    assert not client.exists(logs.wake_key)


def test_a_response_takes_large_events_in_parts_of_about_take_chars(
    client: redis.Redis, logs: LogMultiplexer
) -> None:
    """What a response splices, joins and encodes at once is bounded (a client that
    stops reading holds about TAKE_CHARS in copies), whatever the segment's size; the
    events still arrive whole, in order, once each."""
    big = TAKE_CHARS * 2 // 5  # two fit in one take, a third does not
    contents = [str(n) * big for n in range(6)]
    segment_id = _segment(client, "t-large", contents)
    taken: list[list[int]] = []
    with logs.subscribe(segment_id) as subscription:
        for batch in subscription.batches(wait=5, timeout=10):
            assert batch is not None
            taken.append([s.sequence for s in batch])
    assert [n for batch in taken for n in batch] == list(range(7))  # and the terminal
    assert all(len([n for n in batch if n < 6]) <= 2 for batch in taken)
