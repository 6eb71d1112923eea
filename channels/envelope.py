"""The broadcast envelope every channel transport sends
(docs/reference/neuron-streaming-spec.md sections 2.2, 2.3).

One logical event is ``{"streamId": <32 hex>, "sequence": n, "type": t, "data": d}`` with
that key order. ``sequence`` counts logical events from 0 per segment, terminals
included; a terminal (``stream.completed``, ``stream.interrupted``, ``stream.failed``)
carries only ``{"workflowId": <thread id>}``. JSON is compact with UTF-8 kept verbatim,
as on the SSE path, so relayed frames stay byte-identical to pulled ones.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from relayline.channels.errors import EnvelopeError
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import SEGMENT_ID

FRAGMENT = "stream.fragment"
COMPLETED = "stream.completed"
INTERRUPTED = "stream.interrupted"
FAILED = "stream.failed"
TERMINALS = frozenset({COMPLETED, INTERRUPTED, FAILED})
#: the last entry of a segment whose run was taken over (its worker was lost): written by
#: the taker, ``{"newer": <the segment that goes on>, "attempt": n}``; not a terminal
#: (the run did not end), but nothing follows it in this segment
REPLACED = "stream.replaced"

#: the largest integer a browser consumer can hold exactly (``Number.MAX_SAFE_INTEGER``)
MAX_SAFE_INTEGER = 2**53 - 1

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# shared.jsonutil.dumps's settings in one reused encoder: json.dumps builds a fresh
# encoder on every call given options, a third of this path's per-event cost.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_TYPE_JSON: dict[str, str] = {}


def encode_json(value: Any) -> str:
    """Compact JSON of a payload. Lone surrogates (undecodable input) become U+FFFD, as
    on the SSE path; left in, they would make the frame unencodable as UTF-8."""
    text = _ENCODER.encode(value)
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub("\ufffd", text)
    return text


def type_json(event_type: str) -> str:
    """The JSON string of an event type, cached: a segment repeats a handful of types."""
    found = _TYPE_JSON.get(event_type)
    if found is None:
        found = encode_json(event_type)
        if len(_TYPE_JSON) < 1024:
            _TYPE_JSON[event_type] = found
    return found


def encode_envelope(segment_id: str, sequence: int, event_type: str, data_json: str) -> str:
    """The envelope text around already-encoded data, so data is serialised only once."""
    return (
        f'{{"streamId":"{segment_id}","sequence":{sequence},'
        f'"type":{type_json(event_type)},"data":{data_json}}}'
    )


def utf8_len(text: str) -> int:
    """Byte length of ``text`` in UTF-8 (``isascii`` is O(1) on CPython)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def terminal_data(workflow_id: str) -> dict[str, Any]:
    """The whole payload of a terminal: never state, error text or the interrupt."""
    return {"workflowId": workflow_id}


def is_terminal(event_type: str) -> bool:
    return event_type in TERMINALS


def as_index(value: object, upper: int = MAX_SAFE_INTEGER) -> int | None:
    """``value`` if it is a JSON integer in ``0..upper`` (bools are not), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= upper:
        return value
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Envelope:
    """One envelope as received: a logical event, a terminal or one fragment of an event."""

    segment_id: str
    sequence: int
    type: str
    data: Any

    @property
    def is_terminal(self) -> bool:
        return self.type in TERMINALS

    @property
    def is_fragment(self) -> bool:
        return self.type == FRAGMENT

    def to_json(self) -> str:
        return encode_envelope(self.segment_id, self.sequence, self.type, encode_json(self.data))

    def to_event(self) -> ProtocolEvent:
        """The ProtocolEvent this envelope carries. ``[]`` (PHP's empty payload) becomes
        ``{}``; any other non-object payload cannot be a ProtocolEvent."""
        data = self.data
        if isinstance(data, list) and not data:
            data = {}
        if not isinstance(data, dict):
            raise EnvelopeError("Protocol event payload must be an object")
        return ProtocolEvent(self.type, data)

    @classmethod
    def parse(cls, frame: str | bytes | Mapping[str, Any]) -> Envelope:
        """Validate one frame (JSON text or decoded object) as an envelope."""
        value: Any = frame
        if isinstance(frame, str | bytes):
            try:
                value = json.loads(frame)
            except ValueError as exc:  # includes invalid UTF-8 in bytes
                raise EnvelopeError("Invalid channel envelope") from exc
        if not isinstance(value, Mapping) or "data" not in value:
            raise EnvelopeError("Invalid channel envelope")
        segment_id, event_type = value.get("streamId"), value.get("type")
        sequence = as_index(value.get("sequence"))
        if (
            not isinstance(segment_id, str)
            or not SEGMENT_ID.fullmatch(segment_id)
            or sequence is None
            or not isinstance(event_type, str)
            or not event_type
        ):
            raise EnvelopeError("Invalid channel envelope")
        return cls(segment_id, sequence, event_type, value["data"])
