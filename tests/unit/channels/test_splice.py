"""Splicing an envelope into its SSE frame gives exactly what decoding it and encoding
the event again gives (shared.sse.encode_event), for every payload."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relayline.channels.envelope import Envelope, encode_envelope, encode_json
from relayline.channels.errors import ChannelReadError
from relayline.channels.stream.splice import splice
from relayline.shared.sse import encode_event

STREAM = "0123456789abcdef" * 2

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_payloads = st.dictionaries(
    st.sampled_from(["content", "delta", "messageId", "type", "id", "é", "x\ny", ""]) | st.text(),
    _json,
    max_size=5,
)
_types = st.sampled_from(["text", "TEXT_MESSAGE_CONTENT", "text-delta", "tool-input-available"])


def _decoded(text: str) -> str:
    return encode_event(Envelope.parse(text).to_event())


@settings(max_examples=300, deadline=None)
@given(sequence=st.integers(min_value=0, max_value=2**53 - 1), event_type=_types, data=_payloads)
def test_splicing_is_byte_identical_to_decoding_and_encoding_again(
    sequence: int, event_type: str, data: dict[str, Any]
) -> None:
    text = encode_envelope(STREAM, sequence, event_type, encode_json(data))
    spliced = splice(text)
    assert spliced.frame == _decoded(text)
    assert (spliced.sequence, spliced.type) == (sequence, event_type)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"content": "héllo wörld ✓ 日本 🎉"},
        {"content": 'line\nbreak "quoted" back\\slash \u2028 \x07'},
        {"nested": {"deep": [1, 2.5, {"k": None}], "empty": {}}, "list": []},
        {"type": "overrides"},  # a "type" member: the decoding path keeps the same bytes
        {"content": "\ud800 lone"},  # replaced by U+FFFD when the envelope was built
    ],
)
def test_chosen_payloads_splice_identically(data: dict[str, Any]) -> None:
    text = encode_envelope(STREAM, 7, "text", encode_json(data))
    assert splice(text).frame == _decoded(text)


def test_the_slicing_path_takes_ordinary_events() -> None:
    text = encode_envelope(STREAM, 3, "text", '{"content":"hé"}')
    assert splice(text).frame == 'data: {"type":"text","content":"hé"}\n\n'
    assert splice(encode_envelope(STREAM, 4, "text", "{}")).frame == 'data: {"type":"text"}\n\n'


def test_terminals_carry_no_frame_and_odd_payloads_fall_back() -> None:
    done = splice(encode_envelope(STREAM, 9, "stream.completed", '{"workflowId":"t"}'))
    assert (done.sequence, done.type, done.frame) == (9, "stream.completed", "")
    # PHP's empty payload `[]` decodes to {} as Envelope.to_event has it.
    assert splice(encode_envelope(STREAM, 1, "text", "[]")).frame == 'data: {"type":"text"}\n\n'
    with pytest.raises(ChannelReadError, match="invalid envelope"):
        splice(encode_envelope(STREAM, 1, "text", '"a string"'))
    with pytest.raises(ChannelReadError, match="invalid envelope"):
        splice("not json")
