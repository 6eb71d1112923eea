"""Reading server-sent events in tests: the frames of a streaming response (with their
``id:``), the events of a whole body, and a native answer's text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import requests


class Frame:
    def __init__(self, event: dict[str, Any], id: str | None) -> None:
        self.event = event
        self.id = id


def _frames(lines: Iterable[str]) -> Iterator[Frame]:
    event_id: str | None = None
    for line in lines:
        if line.startswith("id: "):
            event_id = line[len("id: ") :]
        elif line.startswith("data: "):
            yield Frame(json.loads(line[len("data: ") :]), event_id)
            event_id = None


def frames(response: requests.Response) -> Iterator[Frame]:
    """The SSE frames of a streaming response as they arrive (comments skipped)."""
    return _frames(response.iter_lines(decode_unicode=True))


def events_of(body: str) -> list[dict[str, Any]]:
    """The events of a whole SSE body."""
    return [frame.event for frame in _frames(body.splitlines())]


def text_of(events: Iterable[dict[str, Any]]) -> str:
    """A native answer's text: its text deltas, joined."""
    return "".join(e["content"] for e in events if e["type"] == "text")
