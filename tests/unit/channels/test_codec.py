"""The envelope and the stream.fragment codec (reference 2.2-2.4)."""

from __future__ import annotations

import base64
import json

import pytest

from relayline.channels.envelope import (
    Envelope,
    encode_envelope,
    encode_json,
    terminal_data,
)
from relayline.channels.errors import ChannelLimitError, EnvelopeError
from relayline.channels.fragments import Fragment, fragment_envelopes, join_parts, largest
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.jsonutil import dumps
from tests.support.channel_support import SEGMENT_ID, Memory, State


def test_envelope_key_order_and_compact_utf8() -> None:
    text = encode_envelope(SEGMENT_ID, 7, "text-delta", encode_json({"delta": "è / 😀"}))
    assert text == (
        '{"streamId":"3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0","sequence":7,'
        '"type":"text-delta","data":{"delta":"è / 😀"}}'
    )
    assert list(json.loads(text)) == ["streamId", "sequence", "type", "data"]


def test_segment_ids_are_fresh_32_hex() -> None:
    ids = {new_segment_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 32 and int(i, 16) >= 0 and i == i.lower() for i in ids)


def test_lone_surrogates_become_replacement_characters() -> None:
    text = encode_json({"k\udfff": "a\ud800b"})
    assert text == '{"k\ufffd":"a\ufffdb"}'
    text.encode("utf-8")


def test_terminal_carries_only_the_workflow_id() -> None:
    assert terminal_data("thread-42") == {"workflowId": "thread-42"}


def test_envelope_round_trip_and_event() -> None:
    envelope = Envelope(SEGMENT_ID, 3, "custom", {"type": "inner", "value": {}})
    assert Envelope.parse(envelope.to_json()) == envelope
    assert Envelope.parse(envelope.to_json().encode()) == envelope
    # The envelope type is the event's; a payload "type" key stays in data.
    assert envelope.to_event() == ProtocolEvent("custom", {"type": "inner", "value": {}})
    assert Envelope(SEGMENT_ID, 0, "finish", []).to_event() == ProtocolEvent("finish", {})
    with pytest.raises(EnvelopeError, match="must be an object"):
        Envelope(SEGMENT_ID, 0, "x", [1]).to_event()


@pytest.mark.parametrize(
    "frame",
    [
        "not json",
        b"\xff\xfe",
        "[]",
        {"streamId": SEGMENT_ID.upper(), "sequence": 0, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID[:-1], "sequence": 0, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": -1, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": True, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": 1.0, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": 2**53, "type": "t", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": 0, "type": "", "data": {}},
        {"streamId": SEGMENT_ID, "sequence": 0, "type": 3, "data": {}},
        {"streamId": SEGMENT_ID, "sequence": 0, "type": "t"},
    ],
)
def test_invalid_envelopes_are_refused(frame: object) -> None:
    with pytest.raises(EnvelopeError, match="Invalid channel envelope"):
        Envelope.parse(frame)  # type: ignore[arg-type]


def test_worked_example_of_the_sizing_search() -> None:
    """Budget 200, one item per delivery, identity encoding: the search picks 10 groups.

    The probe carries index = total = ceil(187 / 3) = 63, so with an empty part it is
    158 bytes; 42 bytes are left, 10 whole groups (40 characters) fit and 11 would
    not. Slices are 30 bytes, so 187 bytes make 7 fragments of 196 bytes, the last
    one padded."""
    channel = Memory(budget=200)
    channel.send(ProtocolEvent("text-delta", {"id": "text_k2", "delta": "Ciao"}))
    tool = {"toolCallId": "call_7", "output": "Perugia è bella / " * 8}
    channel.send(ProtocolEvent("tool-output-available", tool))
    channel.completed(State("thread-42"), "thread-42")
    sizes = [len(d.encode()) for d in channel.deliveries]
    assert sizes == [119, 196, 196, 196, 196, 196, 196, 168, 120]
    fragments = [json.loads(d) for d in channel.deliveries[1:-1]]
    assert fragments[0] == {
        "streamId": SEGMENT_ID,
        "sequence": 1,
        "type": "stream.fragment",
        "data": {
            "event": "tool-output-available",
            "index": 0,
            "total": 7,
            "part": "eyJ0b29sQ2FsbElkIjoiY2FsbF83Iiwib3V0cHV0",
        },
    }
    parts = [f["data"]["part"] for f in fragments]
    assert [len(p) for p in parts] == [40] * 6 + [12]
    assert all("=" not in p for p in parts[:-1]) and parts[-1].endswith("==")
    assert join_parts(parts) == tool
    assert json.loads(channel.deliveries[-1])["sequence"] == 2


def test_parts_are_urlsafe_whole_groups_and_only_the_last_is_padded() -> None:
    data = encode_json({"blob": "\u00ff\u00fe?>" * 300})  # bytes that base64 to + and /
    envelopes = fragment_envelopes(SEGMENT_ID, 4, "x", data, lambda e: 300 - len(e.encode()))
    fragments = [Fragment.parse(json.loads(e)["data"]) for e in envelopes]
    parts = [f.part for f in fragments]
    assert all("+" not in p and "/" not in p for p in parts)
    assert any("-" in p or "_" in p for p in parts)
    assert all(len(p) % 4 == 0 and "=" not in p for p in parts[:-1])
    assert [len(base64.urlsafe_b64decode(p)) % 3 for p in parts[:-1]] == [0] * (len(parts) - 1)
    assert [f.index for f in fragments] == list(range(len(fragments)))
    assert {f.total for f in fragments} == {len(fragments)}
    assert join_parts(parts) == json.loads(data)


def test_search_is_the_largest_fitting_group_count() -> None:
    data = encode_json({"text": "é" * 5000})
    for limit in (150, 151, 199, 1000, 4097):

        def room(envelope: str, limit: int = limit) -> int:
            return limit - len(envelope)

        envelopes = fragment_envelopes(SEGMENT_ID, 0, "t", data, room)
        assert all(len(e) <= limit for e in envelopes)
        first = json.loads(envelopes[0])["data"]["part"]
        # One more group in the probe (index = total = ceil(L / 3)) would not fit.
        most = -(-len(data.encode()) // 3)
        probe = encode_envelope(
            SEGMENT_ID,
            0,
            "stream.fragment",
            f'{{"event":"t","index":{most},"total":{most},"part":"{"A" * (len(first) + 4)}"}}',
        )
        assert len(probe) > limit


def test_no_room_for_any_group_raises() -> None:
    with pytest.raises(ChannelLimitError, match="fragment envelope"):
        fragment_envelopes(SEGMENT_ID, 0, "t", '{"a":1}', lambda e: 100 - len(e))


def test_largest_is_a_binary_search() -> None:
    calls: list[int] = []

    def fits(n: int) -> bool:
        calls.append(n)
        return n <= 700

    assert largest(1000, fits) == 700
    assert len(calls) <= 11
    assert largest(0, fits) == 0
    assert largest(5, lambda n: False) == 0


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"event": "", "index": 0, "total": 1, "part": "QQ=="},
        {"event": "stream.fragment", "index": 0, "total": 1, "part": "QQ=="},
        {"event": "x", "index": 0, "total": 0, "part": "QQ=="},
        {"event": "x", "index": 0, "total": 4097, "part": "QQ=="},
        {"event": "x", "index": 1, "total": 1, "part": "QQ=="},
        {"event": "x", "index": -1, "total": 2, "part": "QQ=="},
        {"event": "x", "index": 0, "total": True, "part": "QQ=="},
        {"event": "x", "index": 0, "total": 1, "part": ""},
        {"event": "x", "index": 0, "total": 1, "part": "QQ+/"},
        {"event": "x", "index": 0, "total": 1, "part": "Q==="},
        {"event": "x", "index": 0, "total": 2, "part": "QQ=="},
        {"event": "x", "index": 0, "total": 2, "part": "QUJ"},
        {"event": "x", "index": 0, "total": 2},
    ],
)
def test_invalid_fragments_are_refused(data: object) -> None:
    with pytest.raises(EnvelopeError, match="Invalid channel fragment"):
        Fragment.parse(data)


@pytest.mark.parametrize("parts", [["QUJD", "R"], ["_w"], ["eyJh"], ["!!!!"]])
def test_bad_reassembled_payloads(parts: list[str]) -> None:
    with pytest.raises(EnvelopeError, match="Invalid reassembled payload"):
        join_parts(parts)


@pytest.mark.parametrize(
    "value",
    [{"a": [1, 2.5, None, True], "é": "x / y"}, "😀", [], {}, 10**20, -0.0, 1e300],
)
def test_payload_json_matches_the_sse_path(value: object) -> None:
    assert encode_json(value) == dumps(value)


@pytest.mark.parametrize("value", [float("nan"), {"x": float("inf")}, {1j: 1}, object()])
def test_unencodable_payloads_raise_like_the_sse_path(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        dumps(value)
    with pytest.raises((ValueError, TypeError)):
        encode_json(value)
