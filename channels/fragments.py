"""The ``stream.fragment`` codec (docs/reference/neuron-streaming-spec.md section 2.4).

An event too big for the transport becomes ``total`` envelopes sharing its sequence,
each with data ``{"event", "index", "total", "part"}``. ``part`` is URL-safe base64 of
a slice of the event's data JSON bytes; every slice but the last is a whole number of
3-byte groups, so only the last part can carry ``=`` padding. The slice size comes
from a deterministic search, so every implementation cuts the same event the same way.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relayline.channels.envelope import FRAGMENT, as_index, encode_envelope, type_json
from relayline.channels.errors import ChannelLimitError, EnvelopeError

#: most fragments a consumer accepts for one event
MAX_PARTS = 4096

_PART = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_FROM_URLSAFE = str.maketrans("-_", "+/")


def encode_part(chunk: bytes) -> str:
    return base64.urlsafe_b64encode(chunk).decode("ascii")


def fragment_data_json(event_type: str, index: int, total: int, part: str) -> str:
    """The fragment payload with its fixed key order (``part`` is base64: no escaping)."""
    return f'{{"event":{type_json(event_type)},"index":{index},"total":{total},"part":"{part}"}}'


def largest(upper: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n`` in ``1..upper`` with ``fits(n)``, 0 if none; ``fits`` must only
    turn false as ``n`` grows (measurement hooks are monotonic by contract)."""
    low, high, best = 1, upper, 0
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def fragment_envelopes(
    segment_id: str,
    sequence: int,
    event_type: str,
    data_json: str,
    room: Callable[[str], int],
) -> list[str]:
    """Cut one event into fragment envelopes as large as the limits allow.

    ``room(envelope)`` is the smallest number of bytes left under any limit once the
    envelope is transport-encoded (negative: it does not fit). The caller re-checks the
    real fragments, whose padding or digits may encode differently from the probe.
    """
    data = data_json.encode("utf-8")
    # An upper bound on the fragment count, so the probe's digits are never too few.
    most = -(-len(data) // 3)

    def probe(groups: int) -> str:
        fragment = fragment_data_json(event_type, most, most, "A" * (4 * groups))
        return encode_envelope(segment_id, sequence, FRAGMENT, fragment)

    capacity = room(probe(0))
    groups = largest(min(most, capacity // 4), lambda groups: room(probe(groups)) >= 0)
    if groups < 1:
        raise ChannelLimitError("Channel byte limits cannot fit a fragment envelope and its data.")
    size = 3 * groups
    total = -(-len(data) // size)
    return [
        encode_envelope(
            segment_id,
            sequence,
            FRAGMENT,
            fragment_data_json(event_type, index, total, encode_part(data[start : start + size])),
        )
        for index, start in enumerate(range(0, len(data), size))
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Fragment:
    """The validated data of one ``stream.fragment`` envelope."""

    event: str
    index: int
    total: int
    part: str

    @classmethod
    def parse(cls, data: Any) -> Fragment:
        """Validate fragment data as a browser consumer does
        (docs/reference/neuron-streaming-spec.md section 2.6)."""
        if not isinstance(data, Mapping):
            raise EnvelopeError("Invalid channel fragment")
        event, part = data.get("event"), data.get("part")
        index, total = as_index(data.get("index")), as_index(data.get("total"), MAX_PARTS)
        if (
            not isinstance(event, str)
            or not event
            or event == FRAGMENT
            or total is None
            or total < 1
            or index is None
            or index >= total
            or not isinstance(part, str)
            or not _PART.fullmatch(part)
            or (index < total - 1 and (len(part) % 4 or part.endswith("=")))
        ):
            raise EnvelopeError("Invalid channel fragment")
        return cls(event, index, total, part)


def join_parts(parts: Sequence[str]) -> Any:
    """Reassemble parts in index order: base64url-decode, strict UTF-8, then JSON."""
    joined = "".join(parts).translate(_FROM_URLSAFE)
    joined += "=" * (-len(joined) % 4)  # tolerate an unpadded last part, as atob does
    try:
        text = base64.b64decode(joined, validate=True).decode("utf-8")
        return json.loads(text)
    except (binascii.Error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise EnvelopeError("Invalid reassembled payload") from exc
