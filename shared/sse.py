"""Server-sent events framing: ``data: <json>\\n\\n`` per event, nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from relayline.shared.events import ProtocolEvent
from relayline.shared.jsonutil import dumps

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_event(event: ProtocolEvent) -> str:
    """One SSE frame. Lone surrogates (undecodable input) become U+FFFD."""
    body = dumps(event.to_json())
    if _LONE_SURROGATE.search(body):
        body = _LONE_SURROGATE.sub("\ufffd", body)
    return f"data: {body}\n\n"


def encode_sse(events: Iterable[ProtocolEvent]) -> Iterator[str]:
    for event in events:
        yield encode_event(event)


HEARTBEAT = ": keep-alive\n\n"
