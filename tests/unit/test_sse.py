"""SSE framing (reference 2.1, catalogue 74)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relayline.shared.events import ProtocolEvent
from relayline.shared.sse import HEARTBEAT, encode_event, encode_sse


def test_frame_is_data_line_with_type_first_and_compact_json() -> None:
    event = ProtocolEvent("text-delta", {"id": "text_4c2", "delta": "Hi", "n": [1, {"a": None}]})
    assert encode_event(event) == (
        'data: {"type":"text-delta","id":"text_4c2","delta":"Hi","n":[1,{"a":null}]}\n\n'
    )


def test_event_without_data() -> None:
    assert encode_event(ProtocolEvent("finish")) == 'data: {"type":"finish"}\n\n'


def test_non_ascii_is_kept_as_utf8() -> None:
    frame = encode_event(ProtocolEvent("text", {"content": "Ciao è 😀"}))
    assert frame == 'data: {"type":"text","content":"Ciao è 😀"}\n\n'
    assert "\\u" not in frame
    assert frame.encode("utf-8").decode("utf-8") == frame


def test_lone_surrogate_becomes_replacement_character() -> None:
    frame = encode_event(ProtocolEvent("text", {"content": "a\ud800b", "k\udfff": 1}))
    assert frame == 'data: {"type":"text","content":"a\ufffdb","k\ufffd":1}\n\n'
    frame.encode("utf-8")  # would raise UnicodeEncodeError with a surrogate left in


def test_nan_raises() -> None:
    with pytest.raises(ValueError):
        encode_event(ProtocolEvent("custom", {"value": float("nan")}))
    with pytest.raises(ValueError):
        encode_event(ProtocolEvent("custom", {"value": float("inf")}))


def test_encode_sse_over_a_list_and_lazily() -> None:
    events = [ProtocolEvent("start"), ProtocolEvent("text", {"content": "x"}), ProtocolEvent("end")]
    assert list(encode_sse(events)) == [
        'data: {"type":"start"}\n\n',
        'data: {"type":"text","content":"x"}\n\n',
        'data: {"type":"end"}\n\n',
    ]
    assert list(encode_sse([])) == []

    def source() -> Iterator[ProtocolEvent]:
        yield ProtocolEvent("a")
        raise RuntimeError("source failed")

    frames = encode_sse(source())
    assert next(frames) == 'data: {"type":"a"}\n\n'
    with pytest.raises(RuntimeError, match="source failed"):
        next(frames)


def test_heartbeat_is_a_comment() -> None:
    assert HEARTBEAT.startswith(":")
    assert HEARTBEAT.endswith("\n\n")
