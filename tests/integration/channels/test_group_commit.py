"""Group commit across segment logs on a real Redis: while one round trip is in flight,
what every other log appends waits for the next round, which carries them all in one
pipeline, each log's entries in order; a terminal waits for its own write; one log's
failure is its own."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis
from redis.client import Pipeline

from relayline.channels import LogLimits, SegmentLog
from relayline.channels.envelope import Envelope
from relayline.channels.keys import log_key
from relayline.channels.stream.group_commit import GroupWriter, writer_for
from relayline.channels.stream.log import LogBatching, entries
from relayline.shared.ids import new_segment_id

pytestmark = pytest.mark.integration

LIMITS = LogLimits(retention=60, max_age=3600, max_events=50_000)
#: every append after the first one is eager: none waits for a linger
EAGER = LogBatching(linger=0)


class HeldRedis(redis.Redis):
    """A real client whose next pipeline round can be held in flight (fault injection:
    a slow round trip), and which records the log keys every round it executed appended
    to (each append is the fenced script, channels.stream.log: EVAL with its keys)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rounds: list[list[str]] = []
        self.hold: threading.Event | None = None
        self.holding = threading.Event()

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute
        client = self

        def held_execute(raise_on_error: bool = True) -> list[Any]:
            keys = [c[0][3] for c in pipe.command_stack if c[0][0] == "EVAL"]
            client.rounds.append([k.decode() if isinstance(k, bytes) else k for k in keys])
            gate, client.hold = client.hold, None
            if gate is not None:
                client.holding.set()
                assert gate.wait(10), "the held round was never released"
            return execute(raise_on_error=raise_on_error)

        pipe.execute = held_execute  # type: ignore[method-assign]
        return pipe


@pytest.fixture
def held(redis_url: str) -> Any:
    client = HeldRedis.from_url(redis_url)
    yield client
    client.close()


def _envelope(segment_id: str, sequence: int, terminal: bool = False) -> str:
    kind = "stream.completed" if terminal else "text"
    return Envelope(segment_id, sequence, kind, {"n": sequence}).to_json()


def _log(client: redis.Redis, thread: str) -> SegmentLog:
    return SegmentLog(client, new_segment_id(), thread, LIMITS, batching=EAGER)


def _hold_a_round(client: HeldRedis, log: SegmentLog) -> tuple[threading.Event, threading.Thread]:
    """A round trip for ``log`` held in flight in another thread."""
    release = threading.Event()
    client.hold = release
    writing = threading.Thread(target=log.append, args=(_envelope(log.segment_id, 0),))
    writing.start()
    assert client.holding.wait(10)
    return release, writing


def test_appends_during_a_round_trip_share_the_next_one_and_keep_their_order(
    held: HeldRedis,
) -> None:
    first = _log(held, "thread-first")
    release, writing = _hold_a_round(held, first)
    logs = [_log(held, f"thread-{n}") for n in range(20)]
    for log in logs:
        for sequence in range(3):
            log.append(_envelope(log.segment_id, sequence))  # returns: a round is in flight
    assert all(entries(held, log.segment_id) == [] for log in logs)

    release.set()
    writing.join(10)
    for log in logs:
        log.flush()

    assert held.rounds[0] == [log_key(first.segment_id)]
    # One round trip for all twenty logs, each log's three envelopes as one entry.
    assert held.rounds[1] == [log_key(log.segment_id) for log in logs]
    assert len(held.rounds) == 2
    for log in logs:
        assert [Envelope.parse(e).sequence for e in entries(held, log.segment_id)] == [0, 1, 2]


def test_a_terminal_during_a_round_trip_is_written_when_its_append_returns(
    held: HeldRedis,
) -> None:
    first = _log(held, "thread-busy")
    release, writing = _hold_a_round(held, first)
    log = _log(held, "thread-ending")
    log.append(_envelope(log.segment_id, 0))
    done = threading.Event()

    def end() -> None:
        log.append(_envelope(log.segment_id, 1, terminal=True), terminal=True)
        done.set()

    ending = threading.Thread(target=end)
    ending.start()
    assert not done.wait(0.2)  # waits for the round in flight, then leads its own
    release.set()
    ending.join(10)
    writing.join(10)
    assert done.is_set()
    kept = [Envelope.parse(e) for e in entries(held, log.segment_id)]
    assert [e.sequence for e in kept] == [0, 1] and kept[-1].is_terminal


def test_a_failing_log_fails_alone_in_a_shared_round(held: HeldRedis) -> None:
    first = _log(held, "thread-hold")
    release, writing = _hold_a_round(held, first)
    broken, healthy = _log(held, "thread-broken"), _log(held, "thread-healthy")
    held.set(log_key(broken.segment_id), "not a stream")  # XADD answers WRONGTYPE
    broken.append(_envelope(broken.segment_id, 0))
    healthy.append(_envelope(healthy.segment_id, 0))
    release.set()
    writing.join(10)
    healthy.flush()

    assert held.rounds[1] == [log_key(broken.segment_id), log_key(healthy.segment_id)]
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        broken.append(_envelope(broken.segment_id, 1))
    healthy.append(_envelope(healthy.segment_id, 1, terminal=True), terminal=True)
    assert [Envelope.parse(e).sequence for e in entries(held, healthy.segment_id)] == [0, 1]


def test_many_threads_lose_nothing_and_use_fewer_round_trips_than_appends(
    held: HeldRedis,
) -> None:
    logs = [_log(held, f"thread-many-{n}") for n in range(40)]
    per_log = 50

    def run(log: SegmentLog) -> None:
        for sequence in range(per_log - 1):
            log.append(_envelope(log.segment_id, sequence))
        log.append(_envelope(log.segment_id, per_log - 1, terminal=True), terminal=True)

    threads = [threading.Thread(target=run, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for log in logs:
        kept = [Envelope.parse(e).sequence for e in entries(held, log.segment_id)]
        assert kept == list(range(per_log))
    assert len(held.rounds) < len(logs) * per_log
    assert any(len(keys) > 1 for keys in held.rounds)  # some rounds carried several logs


def test_each_client_has_its_own_writer(held: HeldRedis, redis_url: str) -> None:
    other = redis.Redis.from_url(redis_url)
    try:
        assert writer_for(held) is writer_for(held)
        assert isinstance(writer_for(other), GroupWriter)
        assert writer_for(other) is not writer_for(held)
    finally:
        other.close()
