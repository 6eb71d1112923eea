"""Asking the web for a segment's kept envelopes: the ``recover`` of a Consumer that
reads a push transport (``GET <thread url>/segments/<streamId>/envelopes?after=<n>``,
web.segments). Plain HTTP with ``requests``: channels never import the web."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypedDict, cast

import requests

from relayline.channels.stream.log import LogGoneError

#: answers that no later ask can change: the log cannot supply the events
_FINAL = frozenset({400, 401, 403, 404, 410})


class EnvelopesAnswer(TypedDict):
    """The web's answer: envelopes after the cursor, and whether they reach the end."""

    envelopes: list[dict[str, Any]]
    ended: bool


@dataclasses.dataclass(frozen=True)
class EnvelopesOverHttp:
    """``Consumer(recover=EnvelopesOverHttp(f"{base}/api/threads/{thread_id}",
    headers={"Authorization": ...}))``: the same credentials the app's other requests
    carry (the route answers the thread's owner only)."""

    thread_url: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    timeout: float = 10.0

    def __call__(self, segment_id: str, after: int) -> list[dict[str, Any]]:
        url = f"{self.thread_url.rstrip('/')}/segments/{segment_id}/envelopes"
        response = requests.get(
            url, params={"after": str(after)}, headers=dict(self.headers), timeout=self.timeout
        )
        if response.status_code in _FINAL:
            raise LogGoneError(
                f"The log cannot supply segment {segment_id} after {after}: "
                f"{response.status_code} {response.text[:200]}"
            )
        response.raise_for_status()  # a 5xx: a failed ask, asked again later
        return cast(EnvelopesAnswer, response.json())["envelopes"]
