"""The Python consumer: ordering, reassembly, duplicates, gaps (reference 2.6, catalogue I)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from relayline.channels import Consumer, Envelope, GapError
from relayline.channels.consumer import MAX_BUFFERED_BYTES, MAX_QUEUED_EVENTS
from relayline.channels.envelope import encode_json
from relayline.channels.fragments import fragment_envelopes

SID = "3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0"
OTHER = "0123456789abcdef0123456789abcdef"


def frame(seq: int, kind: str = "text", data: Any = None, sid: str = SID) -> dict[str, Any]:
    return {"streamId": sid, "sequence": seq, "type": kind, "data": {} if data is None else data}


def fragments(seq: int, kind: str, data: Any, room: int = 200, sid: str = SID) -> list[Any]:
    texts = fragment_envelopes(sid, seq, kind, encode_json(data), lambda e: room - len(e))
    return [json.loads(t) for t in texts]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    def __init__(self, **options: Any) -> None:
        self.events: list[Envelope] = []
        self.gaps: list[str] = []
        self.clock = Clock()
        self.consumer = Consumer(self.events.append, self.gaps.append, clock=self.clock, **options)

    def feed(self, *frames: Any) -> None:
        for item in frames:
            self.consumer.feed(item)

    @property
    def seen(self) -> list[tuple[int, str]]:
        return [(e.sequence, e.type) for e in self.events]


def test_in_order_events_are_delivered_at_once_and_the_terminal_finishes() -> None:
    r = Recorder()
    r.feed(frame(0, data={"a": 1}), json.dumps(frame(1)), frame(2, "stream.completed"))
    assert r.seen == [(0, "text"), (1, "text"), (2, "stream.completed")]
    assert r.events[0] == Envelope(SID, 0, "text", {"a": 1})
    assert r.consumer.finished == {SID} and r.consumer.deadline is None and not r.gaps


def test_interleaved_fragments_are_ordered_and_precede_an_early_terminal() -> None:  # 136
    payload = {"output": "Perugia è bella / 😀 " * 20}
    parts = fragments(1, "tool-result", payload)
    assert len(parts) > 3
    r = Recorder()
    r.feed(frame(2, "stream.completed"), *reversed(parts[1:]), frame(0), parts[0])
    assert r.seen == [(0, "text"), (1, "tool-result"), (2, "stream.completed")]
    assert r.events[1].data == payload


def test_other_segments_and_delivered_duplicates_are_ignored() -> None:  # 137
    r = Recorder(segment_id=SID)
    r.feed(frame(0), frame(0, sid=OTHER), frame(0), frame(1), frame(0))
    r.feed(frame(2, "stream.completed"), frame(1), frame(2, "stream.completed"))
    assert r.seen == [(0, "text"), (1, "text"), (2, "stream.completed")]
    assert not r.gaps and r.consumer.finished == {SID}
    late = Recorder()
    late.feed(frame(0), frame(1), frame(0))
    assert late.consumer.deadline is None  # a delivered duplicate is not pending


def test_identical_queued_duplicates_cost_no_buffer() -> None:
    r = Recorder()
    big = frame(1, data="x" * (MAX_BUFFERED_BYTES // 3))
    r.feed(big, big, big, big)
    assert not r.gaps
    r.feed(frame(0))
    assert r.seen == [(0, "text"), (1, "text")]


def test_later_events_and_duplicates_cannot_renew_the_deadline() -> None:  # 138
    parts = fragments(1, "t", {"x": "y" * 300})
    r = Recorder()
    r.feed(frame(0), parts[0])
    assert r.consumer.deadline == 130.0
    r.clock.now = 129.0
    r.feed(parts[0], frame(2), frame(3))  # a duplicate and later arrivals: no progress
    assert r.consumer.deadline == 130.0 and not r.gaps
    r.clock.now = 130.0
    r.consumer.poll()
    assert r.gaps == ["Missing channel events"] and r.consumer.closed
    r.feed(*parts[1:])
    assert r.seen == [(0, "text")]


def test_progress_starts_a_fresh_deadline() -> None:  # 139
    r = Recorder(gap_timeout=5.0)
    r.feed(frame(2))
    assert r.consumer.deadline == 105.0
    r.clock.now = 104.0
    r.feed(frame(0))  # progress, yet 2 still waits for 1
    assert r.consumer.deadline == 109.0
    r.clock.now = 108.0
    r.feed(frame(1))
    assert r.consumer.deadline is None and r.seen == [(0, "text"), (1, "text"), (2, "text")]


def test_without_on_gap_a_gap_raises() -> None:
    consumer = Consumer(clock=Clock(), gap_timeout=1.0)
    consumer.feed(frame(1))
    consumer.clock.now += 1  # type: ignore[attr-defined]
    with pytest.raises(GapError, match="Missing channel events"):
        consumer.poll()
    assert consumer.feed(frame(0)) == []


@pytest.mark.parametrize(
    "second",
    [
        frame(0, data={"a": 2}),  # payload
        frame(0, "other", {"a": 1}),  # type
        fragments(0, "text", {"a": 1}, room=170)[0],  # representation
    ],
)
def test_conflicting_plain_events_are_a_gap(second: dict[str, Any]) -> None:  # 140
    r = Recorder()
    r.feed(frame(1, data={"a": 1}), frame(1, data={"a": 1}))  # an identical duplicate
    assert not r.gaps
    r.feed(second | {"sequence": 1})
    assert r.gaps == ["Conflicting channel events"]


def test_conflicting_fragments_are_a_gap() -> None:  # 140
    data = {"x": "é" * 200}
    parts = fragments(1, "t", data)
    for changed in (
        parts[0] | {"data": parts[0]["data"] | {"part": parts[0]["data"]["part"][::-1]}},
        parts[0] | {"data": parts[0]["data"] | {"total": parts[0]["data"]["total"] + 1}},
        parts[0] | {"data": parts[0]["data"] | {"event": "u"}},
        frame(1, "t", data),
    ):
        r = Recorder()
        r.feed(parts[0], parts[0], changed)
        assert r.gaps == ["Conflicting channel events"], changed


def part_frame(index: int, total: int, part: str, event: str = "t") -> dict[str, Any]:
    return frame(
        0, "stream.fragment", {"event": event, "index": index, "total": total, "part": part}
    )


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ([frame(0) | {"sequence": -1}], "Invalid channel envelope"),
        ([frame(0) | {"sequence": "0"}], "Invalid channel envelope"),
        ([frame(0) | {"type": ""}], "Invalid channel envelope"),
        ([{"streamId": SID, "sequence": 0, "type": "t"}], "Invalid channel envelope"),
        (["{not json"], "Invalid channel envelope"),
        ([part_frame(0, 1, "QQ+/")], "Invalid channel fragment"),
        ([part_frame(0, 2, "QQ==")], "Invalid channel fragment"),
        ([part_frame(0, 4097, "QUJD")], "Invalid channel fragment"),
        ([part_frame(2, 2, "QUJD")], "Invalid channel fragment"),
        ([part_frame(0, 1, "QUJD")], "Invalid reassembled payload"),
        ([part_frame(0, 1, "_w==")], "Invalid reassembled payload"),
    ],
)
def test_malformed_frames_are_a_gap(frames: list[Any], reason: str) -> None:  # 141
    r = Recorder()
    r.feed(*frames)
    assert r.gaps == [reason] and r.events == []
    r.feed(frame(0))
    assert r.events == [] and r.gaps == [reason]  # closed: on_gap is called once


def test_queued_events_are_bounded() -> None:  # 142
    r = Recorder()
    r.feed(*(frame(seq) for seq in range(1, MAX_QUEUED_EVENTS + 1)))
    assert not r.gaps
    r.feed(frame(MAX_QUEUED_EVENTS + 1))
    assert r.gaps == ["Channel buffer limit exceeded"]


def test_buffered_bytes_count_utf8_and_event_names() -> None:  # 142, 149
    quarter = MAX_BUFFERED_BYTES // 4
    ascii_ok = Recorder()
    ascii_ok.feed(*(frame(seq, data="e" * (quarter // 2)) for seq in range(1, 5)))
    assert not ascii_ok.gaps
    multibyte = Recorder()
    multibyte.feed(*(frame(seq, data="é" * (quarter // 2)) for seq in range(1, 5)))
    assert multibyte.gaps == ["Channel buffer limit exceeded"]
    names = Recorder()
    names.feed(frame(1, "n" * (quarter - 4), "e" * quarter), frame(2, "n" * (quarter - 4), ""))
    assert not names.gaps
    names.feed(frame(3, "n" * quarter, 0), frame(4, "n" * quarter, 0))
    assert names.gaps == ["Channel buffer limit exceeded"]


def test_aggregate_parts_are_bounded() -> None:  # 148
    r = Recorder()
    for seq in (1, 2):
        r.feed(*(part_frame(i, 4096, "QUJD") | {"sequence": seq} for i in range(2048)))
    assert not r.gaps
    r.feed(part_frame(3000, 4096, "QUJD") | {"sequence": 3})
    assert r.gaps == ["Channel buffer limit exceeded"]


def test_payloads_are_snapshotted() -> None:  # 143
    r = Recorder()
    data = {"list": [1]}
    r.feed(frame(1, data=data))
    data["list"].append(2)
    r.feed(frame(0))
    assert r.events[1].data == {"list": [1]}


def test_scalar_and_list_payloads_are_preserved() -> None:  # 147
    r = Recorder()
    r.feed(frame(0, data=42), frame(1, data=[1, "a"]), frame(2, data=None) | {"data": None})
    r.feed(*fragments(3, "s", "é" * 200))
    assert [e.data for e in r.events] == [42, [1, "a"], None, "é" * 200]


def test_callbacks_may_feed_and_close_without_recursion() -> None:  # 144
    consumer: Consumer
    seen: list[int] = []

    def on_event(envelope: Envelope) -> None:
        seen.append(envelope.sequence)
        if envelope.sequence == 0:
            assert consumer.feed(frame(1)) == []  # queued, handled after this callback
            assert seen == [0]
        if envelope.sequence == 1:
            consumer.close()

    consumer = Consumer(on_event)
    consumer.feed(frame(0))
    consumer.feed(frame(2))
    assert seen == [0, 1] and consumer.closed


def test_a_throwing_callback_closes_and_rethrows() -> None:
    def boom(envelope: Envelope) -> None:
        raise RuntimeError("client went away")

    consumer = Consumer(boom)
    consumer.feed(frame(1))
    with pytest.raises(RuntimeError, match="went away"):
        consumer.feed(frame(0))
    assert consumer.closed and consumer.deadline is None
    assert consumer.feed(frame(2)) == []


def test_segments_are_discovered_and_finished_ones_stay_closed() -> None:  # 150
    r = Recorder()
    r.feed(frame(1, sid=OTHER), frame(0), frame(0, sid=OTHER), frame(1, "stream.failed"))
    r.feed(frame(0), frame(1, "stream.failed"), frame(2))  # late frames of a finished segment
    assert [(e.segment_id, e.sequence) for e in r.events] == [
        (SID, 0),
        (OTHER, 0),
        (OTHER, 1),
        (SID, 1),
    ]
    assert r.consumer.finished == {SID} and not r.gaps


def test_stream_limits() -> None:  # 150
    active = Recorder()
    active.feed(*(frame(1, sid=f"{i:032x}") for i in range(64)))
    assert not active.gaps
    active.feed(frame(1, sid=f"{64:032x}"))
    assert active.gaps == ["Channel stream limit exceeded"]
    known = Recorder()
    known.feed(*(frame(0, "stream.completed", sid=f"{i:032x}") for i in range(1024)))
    assert not known.gaps and len(known.consumer.finished) == 1024
    known.feed(frame(0, sid=f"{2000:032x}"))
    assert known.gaps == ["Channel stream limit exceeded"]


def test_invalid_selection_is_refused() -> None:
    with pytest.raises(ValueError, match="stream id"):
        Consumer(segment_id="ABC")


@pytest.mark.parametrize("update", ["{}", "not json", json.dumps([frame(0), 3]), b"\xff"])
def test_batches_must_be_arrays_of_envelopes(update: str | bytes) -> None:
    r = Recorder()
    r.consumer.feed_batch(update)
    assert r.gaps == ["Invalid channel envelope"]


def test_frames_queued_past_a_terminal_are_released() -> None:
    r = Recorder()
    r.feed(frame(3), frame(0), frame(1, "stream.interrupted"))
    assert r.consumer.deadline is None
    # The dropped frame no longer counts: a full queue elsewhere still fits.
    r.feed(*(frame(seq, sid=OTHER) for seq in range(1, MAX_QUEUED_EVENTS + 1)))
    assert not r.gaps
