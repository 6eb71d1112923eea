"""AbstractChannel batching, fragmentation and failure policy (catalogue A 1-13)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import relayline.channels.base
from relayline.channels import CallbackChannel, Consumer
from relayline.channels.base import AbstractChannel
from relayline.channels.envelope import encode_envelope, encode_json
from relayline.channels.errors import (
    ChannelClosedError,
    ChannelConfigError,
    ChannelLimitError,
    EnvelopeError,
)
from relayline.shared.delivery import Channel
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import SEGMENT_ID as SEGMENT_ID_PATTERN
from tests.support.channel_support import SEGMENT_ID, Memory, State

DONE = State("thread-42")


def delta(text: str) -> ProtocolEvent:
    return ProtocolEvent("text-delta", {"id": "text_k2", "delta": text})


def test_events_share_a_segment_id_and_count_from_zero() -> None:  # A1
    channel = Memory()
    channel._segment_id = None  # drawn lazily on the first event
    channel.send(delta("a"))
    channel.send(ProtocolEvent("custom", {"type": "payload-type", "value": [1, {}]}))
    channel.completed(DONE, "thread-42")
    envelopes = channel.envelopes()
    assert {e.segment_id for e in envelopes} == {channel.segment_id}
    assert SEGMENT_ID_PATTERN.fullmatch(channel.segment_id)
    assert [e.sequence for e in envelopes] == [0, 1, 2]
    assert envelopes[1].type == "custom"
    assert envelopes[1].data == {"type": "payload-type", "value": [1, {}]}
    assert channel.sequence == 3


def test_each_channel_instance_draws_its_own_segment_id() -> None:
    first, second = CallbackChannel(print), CallbackChannel(print)
    assert first.segment_id != second.segment_id
    assert first.segment_id == first.segment_id


# The state names another thread: the workflow id must come from the argument alone.
ELSEWHERE = State("another-thread")


@pytest.mark.parametrize(
    ("terminal", "kind"),
    [
        (lambda c: c.completed(ELSEWHERE, "thread-42"), "stream.completed"),
        (lambda c: c.interrupted(ELSEWHERE, "thread-42"), "stream.interrupted"),
        (lambda c: c.failed(RuntimeError("secret detail"), "thread-42"), "stream.failed"),
    ],
)
def test_terminals_carry_only_the_workflow_id(terminal: Any, kind: str) -> None:  # A2
    channel = Memory()
    channel.send(delta("a"))
    terminal(channel)
    last = json.loads(channel.deliveries[-1])
    assert last["type"] == kind
    assert last["data"] == {"workflowId": "thread-42"}
    assert last["sequence"] == 1
    assert "secret" not in channel.deliveries[-1]


def test_batch_count_then_pending_then_terminal_alone() -> None:  # A3
    channel = Memory(batch_size=3)
    for text in "abcd":
        channel.send(delta(text))
    assert channel.counts() == [3]
    channel.completed(DONE, "thread-42")
    assert channel.counts() == [3, 1, 1]
    assert [e.sequence for e in channel.envelopes()] == [0, 1, 2, 3, 4]


def envelope_bytes(text: str, sequence: int = 0) -> int:
    data = encode_json({"id": "text_k2", "delta": text})
    return len(encode_envelope(SEGMENT_ID, sequence, "text-delta", data).encode())


def test_byte_budget_includes_the_wrapper() -> None:  # A4
    # Two 240-byte envelopes need 483 bytes in a JSON array: 3 fit under 500 only raw.
    text = "x" * (240 - envelope_bytes(""))
    channel = Memory(budget=500, batch_size=10, array=True)
    for _ in range(5):
        channel.send(delta(text))
    channel.completed(DONE, "thread-42")
    assert channel.counts() == [2, 2, 1, 1]
    assert all(len(d.encode()) <= 500 for d in channel.deliveries)
    # Two envelopes of 249 bytes fit only without the wrapper: they go one by one.
    tight = Memory(budget=500, batch_size=10, array=True)
    tight.send(delta("y" * (249 - envelope_bytes(""))))
    tight.send(delta("y" * (249 - envelope_bytes(""))))
    tight.completed(DONE, "thread-42")
    assert tight.counts() == [1, 1, 1]


def test_unicode_fragments_reassemble_with_distinct_sequences() -> None:  # A5
    channel = Memory(budget=300, batch_size=4, array=True)
    first = {"toolCallId": "call_1", "output": "Perugia è bella / 😀 " * 40}
    second = {"toolCallId": "call_2", "output": "日本語のテキスト " * 60}
    channel.send(ProtocolEvent("tool-output-available", first))
    channel.send(ProtocolEvent("tool-output-available", second))
    channel.completed(DONE, "thread-42")
    assert all(len(d.encode()) <= 300 for d in channel.deliveries)
    frames = channel.envelopes()
    assert {f.sequence for f in frames if f.is_fragment} == {0, 1}
    consumer = Consumer()
    delivered = [e for d in channel.deliveries for e in consumer.feed_batch(d)]
    assert [(e.sequence, e.type) for e in delivered] == [
        (0, "tool-output-available"),
        (1, "tool-output-available"),
        (2, "stream.completed"),
    ]
    assert [delivered[0].data, delivered[1].data] == [first, second]


def test_event_budget_is_independent_of_the_delivery_budget() -> None:  # A6
    channel = Memory(budget=5000, event_budget=400, batch_size=50, array=True)
    for i in range(30):
        channel.send(delta(f"{i} " + "ü" * (i * 20)))
    channel.completed(DONE, "thread-42")
    assert all(len(item.encode()) <= 400 for items in channel.items for item in items)
    assert all(len(d.encode()) <= 5000 for d in channel.deliveries)
    assert max(channel.counts()) > 1  # the event budget does not force single deliveries
    assert any(e.is_fragment for e in channel.envelopes())


def test_terminals_fragment_like_data() -> None:  # A7
    channel = Memory(budget=250)
    channel.completed(DONE, "w" * 1000)
    frames = channel.envelopes()
    assert len(frames) > 1 and all(f.is_fragment for f in frames)
    assert {f.data["event"] for f in frames} == {"stream.completed"}
    delivered = Consumer().feed_batch("[" + ",".join(channel.deliveries) + "]")
    assert [(e.type, e.data) for e in delivered] == [
        ("stream.completed", {"workflowId": "w" * 1000})
    ]


class FormEncoded(Memory):
    """A transport where padding costs more than the probe's letters, as in a form body."""

    def encode(self, type: str, envelope: str) -> str:
        return envelope.replace("=", "%3D")


def test_real_fragments_are_rechecked_against_the_limits() -> None:
    """313 bytes of data leave a 1-byte last slice, padded "==" (4 bytes more once
    form-encoded); at one group per fragment the probe leaves at most 3 bytes spare."""
    refused = 0
    for budget in range(150, 260):
        channel = FormEncoded(budget=budget)
        try:
            channel.send(ProtocolEvent("custom", {"value": "0123456789" * 30 + "a"}))
        except ChannelLimitError as exc:
            assert exc.message == "Transport encoding exceeds the channel fragment byte limits."
            assert channel.attempts == 0
            refused += 1
        else:
            assert all(len(d) <= budget for d in channel.deliveries)
    assert refused > 0


def test_an_impossible_budget_delivers_nothing() -> None:  # A8
    channel = Memory(budget=120)
    with pytest.raises(ChannelLimitError, match="fragment envelope"):
        channel.send(delta("more than the envelope allows" * 3))
    assert channel.deliveries == [] and channel.attempts == 0
    assert isinstance(channel.errors[0], ChannelLimitError)


@pytest.mark.parametrize(
    "limits", [{"batch_size": 0}, {"budget": 0}, {"event_budget": -1}, {"batch_size": -3}]
)
def test_invalid_limits_are_refused_at_construction(limits: dict[str, int]) -> None:  # A9
    with pytest.raises(ValueError, match="must be positive"):
        CallbackChannel(print, **limits)


class HookLimits(Memory):
    def __init__(self, size: int, budget: int | None, event_budget: int | None) -> None:
        super().__init__()
        self.limits = (size, budget, event_budget)

    def batch_size(self) -> int:
        return self.limits[0]

    def budget(self) -> int | None:
        return self.limits[1]

    def event_budget(self) -> int | None:
        return self.limits[2]


@pytest.mark.parametrize("limits", [(0, None, None), (1, 0, None), (1, None, -1)])
def test_invalid_hook_limits_are_refused_on_first_send(limits: tuple[int, Any, Any]) -> None:
    channel = HookLimits(*limits)
    with pytest.raises(ChannelConfigError, match="must be positive"):
        channel.send(delta("a"))
    with pytest.raises(ChannelConfigError):
        channel.completed(DONE, "thread-42")
    assert channel.attempts == 0


def test_after_a_transport_failure_data_stops_and_the_terminal_continues() -> None:  # A10
    channel = Memory(fail_on=(2,))
    channel.send(delta("a"))
    with pytest.raises(ConnectionError):
        channel.send(delta("b"))
    assert channel.stopped
    channel.send(delta("c"))  # a silent no-op from now on
    channel.completed(DONE, "thread-42")
    assert [(e.sequence, e.type) for e in channel.envelopes()] == [
        (0, "text-delta"),
        (2, "stream.completed"),
    ]
    assert channel.attempts == 3
    assert [type(e) for e in channel.errors] == [ConnectionError]


def test_a_failed_pending_flush_still_sends_the_terminal_and_rethrows() -> None:  # A11
    channel = Memory(batch_size=10, fail_on=(1,))
    channel.send(delta("a"))
    channel.send(delta("b"))
    with pytest.raises(ConnectionError, match="attempt 1"):
        channel.completed(DONE, "thread-42")
    assert [(e.sequence, e.type) for e in channel.envelopes()] == [(2, "stream.completed")]


def test_an_unavailable_transport_gets_exactly_one_terminal_attempt() -> None:  # A12
    channel = Memory(fail_always=True)
    with pytest.raises(ConnectionError):
        channel.send(delta("a"))
    channel.send(delta("b"))
    with pytest.raises(ConnectionError, match="attempt 2"):
        channel.failed(RuntimeError("x"), "thread-42")
    assert channel.attempts == 2
    assert len(channel.errors) == 2


def test_payload_is_serialised_once(monkeypatch: pytest.MonkeyPatch) -> None:  # A13
    calls: list[Any] = []

    def counting(value: Any) -> str:
        calls.append(value)
        return encode_json(value)

    monkeypatch.setattr(relayline.channels.base, "encode_json", counting)
    channel = Memory(budget=200)
    big = {"blob": "x" * 2000}
    channel.send(delta("a"))
    channel.send(ProtocolEvent("custom", big))
    assert sum(1 for v in calls if v is big) == 1
    assert len(calls) == 2
    assert len(channel.deliveries) > 3


def test_a_channel_serves_one_segment() -> None:
    channel = Memory()
    channel.completed(DONE, "thread-42")
    with pytest.raises(ChannelClosedError, match="new channel per segment"):
        channel.send(delta("late"))
    with pytest.raises(ChannelClosedError):
        channel.interrupted(DONE, "thread-42")
    assert len(channel.deliveries) == 1


def test_reserved_types_are_refused_without_taking_a_sequence() -> None:
    channel = Memory()
    for kind in ("stream.completed", "stream.fragment", ""):
        with pytest.raises(EnvelopeError):
            channel.send(ProtocolEvent(kind, {}))
    channel.send(delta("a"))
    assert [e.sequence for e in channel.envelopes()] == [0]


def test_unencodable_payload_raises_and_leaves_a_gap() -> None:
    channel = Memory()
    with pytest.raises(ValueError):
        channel.send(ProtocolEvent("custom", {"value": float("nan")}))
    channel.completed(DONE, "thread-42")
    assert [e.sequence for e in channel.envelopes()] == [1]


def test_callback_channel_delivers_json_arrays_and_measures_them_exactly() -> None:
    batches: list[str] = []
    channel = CallbackChannel(batches.append, batch_size=2)
    for text in ("a", "é"):
        channel.send(delta(text))
    channel.interrupted(DONE, "thread-42")
    assert [len(json.loads(b)) for b in batches] == [2, 1]
    for items in (["é"], ["a", "bc", "ü"], []):
        assert channel.batch_bytes(items) == len(channel.batch(items).encode())


def test_channels_satisfy_the_agent_protocol() -> None:
    channel: Channel = CallbackChannel(print)
    assert isinstance(channel, Channel)
    assert isinstance(Memory(), AbstractChannel)
