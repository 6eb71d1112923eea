"""Envelope text to SSE frame by slicing, never decoding: the relay's per-event cost.

An envelope ``{"streamId":"<32 hex>","sequence":N,"type":T,"data":{...}}`` (what
``relayline.channels.envelope.encode_envelope`` writes) carries the event ``{"type":T, **data}``;
its SSE frame, ``data: {"type":T,<data's members>}\\n\\n``, is what
``relayline.shared.sse.encode_event`` gives for it, byte for byte, because the worker encoded the
data with the same compact encoder. Anything unusual (a data that is not an object, a
``"type"`` member that would override the event's type, an escaped surrogate that
decoding would replace, a head this writer never writes) takes the decoding path.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from relayline.channels.envelope import Envelope, is_terminal
from relayline.channels.errors import ChannelReadError, EnvelopeError
from relayline.shared.sse import encode_event

_HEAD = re.compile(
    r'\{"streamId":"[0-9a-f]{32}","sequence":(0|[1-9][0-9]{0,15}),'
    r'"type":"([^"\\\x00-\x1f]+)","data":\{'
)
#: in the data, what decoding and encoding again would not give back as it is
_UNUSUAL = re.compile(r'"type":|\\u[dD][89a-fA-F]')


class Spliced(NamedTuple):
    """One envelope as the relay needs it: its sequence, its type and its SSE frame
    (empty for a terminal, which is never sent)."""

    sequence: int
    type: str
    frame: str


def splice(text: str) -> Spliced:
    """The SSE frame of the envelope ``text``. Raises ChannelReadError for a text that
    is no envelope, or whose payload is no protocol event."""
    head = _HEAD.match(text)
    if head is not None and text.endswith("}}"):
        event_type = head.group(2)
        if is_terminal(event_type):
            return Spliced(int(head.group(1)), event_type, "")
        members = text[head.end() : -2]  # between the data's braces
        if not _UNUSUAL.search(members):
            tail = f",{members}}}" if members else "}"
            body = f'{{"type":"{event_type}"{tail}'
            return Spliced(int(head.group(1)), event_type, f"data: {body}\n\n")
    return _decoded(text)


def _decoded(text: str) -> Spliced:
    """The decoding path, for whatever the slicing does not take."""
    try:
        envelope = Envelope.parse(text)
        if envelope.is_terminal:
            return Spliced(envelope.sequence, envelope.type, "")
        return Spliced(envelope.sequence, envelope.type, encode_event(envelope.to_event()))
    except EnvelopeError as exc:
        raise ChannelReadError(f"A segment log holds an invalid envelope: {exc}.") from exc
