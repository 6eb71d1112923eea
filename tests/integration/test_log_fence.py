"""Fencing covers the segment log, against a real Redis: every append carries the
attempt its writer holds, and once a taker fenced the lost writer's segment (its
recovery: ``SegmentLog.take_over``) each later append of the lost writer is refused
atomically (FencedOutError) and nothing of it, terminal included, lands in the log.
The taker's notice is the old log's last entry, and a relay following the old segment
hears it at once (not at its next heartbeat)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from relayline.channels import LogOnlyChannel, SegmentLog
from relayline.channels.envelope import REPLACED, Envelope
from relayline.channels.errors import SegmentReplacedError
from relayline.channels.stream.log import LogLimits, LogReader, entries, latest_segment
from relayline.channels.stream.reader import LogMultiplexer
from relayline.shared.errors import FencedOutError
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.run_state import RunState

pytestmark = pytest.mark.integration


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


def _channel(client: redis.Redis, thread: str, segment: str) -> LogOnlyChannel:
    log = SegmentLog(client, segment, thread, LogLimits())
    return LogOnlyChannel().into_segment(segment, log)


def _delta(text: str) -> ProtocolEvent:
    return ProtocolEvent("text-delta", {"delta": text})


def _state(thread: str) -> RunState:
    return RunState(thread_id=thread, run_id="r1", status="completed", attempt=1)


def test_a_taken_over_writer_is_refused_and_its_readers_told(client: redis.Redis) -> None:
    old, new = new_segment_id(), new_segment_id()
    lost = _channel(client, "t-fence", old)
    lost.fence(1, took_over=False)
    for word in ("one", "two", "three"):
        lost.send(_delta(word))
    assert lost.log is not None
    lost.log.flush()
    assert len(entries(client, old)) == 3

    taker = _channel(client, "t-fence", new)
    taker.fence(2, took_over=True)  # the recovery, admitted at attempt 2
    kept = [Envelope.parse(text) for text in entries(client, old)]
    notice = kept[-1]
    assert (notice.type, notice.sequence) == (REPLACED, 3)  # after the last envelope kept
    assert notice.data == {"newer": new, "attempt": 2}
    latest = latest_segment(client, "t-fence")
    assert latest is not None and latest.segment_id == new

    # The lost writer comes back: each append is refused, the terminal too, and nothing
    # of it reaches the log (the refusal is the script's, atomic with the append).
    with pytest.raises(FencedOutError) as refused:
        for word in ("late", "later", "latest"):
            lost.send(_delta(word))
            if lost.log is not None:
                lost.log.flush()
    assert "attempt 2" in refused.value.fence_reason
    with pytest.raises(FencedOutError):
        lost.send(_delta("again"))
    with pytest.raises(FencedOutError):
        lost.failed(RuntimeError("boom"), "t-fence")
    with pytest.raises(FencedOutError):
        lost.completed(_state("t-fence"), "t-fence")
    assert [Envelope.parse(text) for text in entries(client, old)] == kept

    # The taker writes its own segment as usual.
    taker.send(_delta("recovered"))
    taker.completed(_state("t-fence"), "t-fence")
    assert [Envelope.parse(t).type for t in entries(client, new)] == [
        "text-delta",
        "stream.completed",
    ]

    # A reader of the old segment gets what was kept, then the news, never a hang.
    reader = LogReader(client, old, after=-1, thread_id="t-fence")
    seen: list[str] = []
    with pytest.raises(SegmentReplacedError) as replaced:
        for envelope in reader.envelopes(wait=15, timeout=30):
            assert envelope is not None
            seen.append(envelope.data["delta"])
    assert seen == ["one", "two", "three"]
    assert replaced.value.newer == new


def test_an_unfenced_writer_never_writes_over_a_takeover(client: redis.Redis) -> None:
    """A write that names no attempt (a refusal published before the run was admitted)
    is refused too once the segment is fenced, and a reused segment (the lost writer
    wrote nothing to it) stays writable by the taker only."""
    segment = new_segment_id()
    taker = _channel(client, "t-reuse", segment)
    client.set("relayline:{thread:t-reuse}:active", f"native:{segment}")
    taker.fence(3, took_over=True)  # its own segment: fenced, no notice in it
    assert entries(client, segment) == []
    stale = _channel(client, "t-reuse", segment)
    stale.fence(2, took_over=False)
    with pytest.raises(FencedOutError):
        stale.send(_delta("stale"))
        assert stale.log is not None
        stale.log.flush()
    unfenced = _channel(client, "t-reuse", segment)
    with pytest.raises(FencedOutError):
        unfenced.send(_delta("nobody's"))
        assert unfenced.log is not None
        unfenced.log.flush()
    taker.send(_delta("mine"))
    assert taker.log is not None
    taker.log.flush()
    assert [Envelope.parse(t).data for t in entries(client, segment)] == [{"delta": "mine"}]


def test_a_relay_hears_the_takeover_at_once(client: redis.Redis) -> None:
    """The relay's shared reader (LogMultiplexer) following the old segment with a 15 s
    heartbeat ends with SegmentReplacedError naming the newer segment within a second
    of the takeover: it does not wait for its heartbeat to look."""
    old, new = new_segment_id(), new_segment_id()
    lost = _channel(client, "t-relay", old)
    lost.fence(1, took_over=False)
    lost.send(_delta("before"))
    assert lost.log is not None
    lost.log.flush()
    mux = LogMultiplexer(client)
    try:
        with mux.subscribe(old, after=-1, thread_id="t-relay") as subscription:
            batches = subscription.batches(wait=15, timeout=60)
            first = next(batches)
            assert first is not None and [s.sequence for s in first] == [0]
            took = time.monotonic()
            _channel(client, "t-relay", new).fence(2, took_over=True)
            with pytest.raises(SegmentReplacedError) as replaced:
                next(batches)
            heard = time.monotonic() - took
    finally:
        mux.close()
    assert replaced.value.newer == new
    assert heard < 1.0, f"the relay heard the takeover after {heard:.2f}s"
