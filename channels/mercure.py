"""MercureChannel: a segment as updates published to a Mercure hub
(docs/reference/neuron-streaming-spec.md section 3.4).

- **Ordering:** the hub dispatches updates in publish order, and each update is a JSON
  array of envelopes in sequence order; the browser listens to ``message`` events.
- **Replay/history:** whatever the hub keeps: a reconnecting ``EventSource`` sends
  ``Last-Event-ID`` and the consumer drops what it already delivered.
- **Maximum payload:** ``max_request_bytes`` (1 MiB by default) bounds the whole
  form-encoded request body; a larger event is fragmented, one request per fragment.
- **Configuration:** the hub URL, the topic, the publisher JWT key (HS256); updates are
  ``private`` by default; ``max_requests_per_second`` paces publishing, packing events
  into one update while the next slot is closed.
"""

from __future__ import annotations

import re
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jwt
import requests

from relayline.channels.base import AbstractChannel
from relayline.channels.errors import ChannelConfigError, PublishError
from relayline.shared.ids import THREAD_ID

if TYPE_CHECKING:
    from relayline.shared.settings import Settings

#: the longest a segment's run may be held waiting for the hub, in total
#: (docs/reference/neuron-streaming-spec.md section 3.4)
MAX_HOLD = 10.0
#: the delay after a 429 whose Retry-After is missing or not a number of seconds
DEFAULT_RETRY_AFTER = 1.0
#: Unicode line breaks that JSON leaves raw inside strings. An update's data goes out as
#: SSE ``data:`` lines, and a hub that splits it on them (flask-mercure-sse uses
#: ``str.splitlines``) would turn each into "\n" inside a JSON string: escaped, the
#: envelope is the same JSON and has nothing any hub could split on.
_LINE_BREAKS = re.compile("[\u2028\u2029\x85]")
_QUOTED_PUNCTUATION = 3  # "[", "]" and "," each percent-encode to three bytes


def publisher_token(key: str, topics: Sequence[str] = ("*",)) -> str:
    """An HS256 JWT allowing publication to ``topics``."""
    return jwt.encode({"mercure": {"publish": list(topics)}}, key, algorithm="HS256")


def subscriber_token(key: str, topic: str, ttl_seconds: float) -> str:
    """An HS256 JWT allowing subscription to ``topic`` only, for ``ttl_seconds``
    (what ``GET /mercure/token`` hands a browser for one thread)."""
    if ttl_seconds <= 0:
        raise ChannelConfigError("A Mercure subscriber token needs a positive lifetime.")
    claims = {"mercure": {"subscribe": [topic]}, "exp": int(time.time() + ttl_seconds)}
    return jwt.encode(claims, key, algorithm="HS256")


def thread_topic(public_url: str, thread_id: str) -> str:
    """The private topic a thread's segments are published to."""
    if not THREAD_ID.fullmatch(thread_id):
        raise ChannelConfigError(f"Invalid thread id for a Mercure topic: {thread_id!r}.")
    return f"{public_url.rstrip('/')}/threads/{thread_id}"


def _retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header; an HTTP-date or garbage means the default."""
    try:
        seconds = float(value) if value is not None else DEFAULT_RETRY_AFTER
    except ValueError:
        return DEFAULT_RETRY_AFTER
    return seconds if 0 <= seconds < float("inf") else DEFAULT_RETRY_AFTER


class MercureChannel(AbstractChannel):
    """Publishes each delivery as one update: a form POST of ``topic``, ``data`` (a JSON
    array of envelopes) and ``private=on``, with a publisher JWT as Bearer token.

    Pacing: with ``max_requests_per_second`` set, events pack into one update until the
    next slot opens (or the update would exceed the byte budget); ``deliver`` waits for
    the slot. A 429 is retried after its Retry-After; any other failure stops the
    segment without retry. Waiting is bounded: time the run spends working pays back
    waiting, and a wait that would bring the total over 10 s stops the segment instead.
    Each publish uses a fresh connection (``Connection: close``): some hubs answer
    kept-alive publishes late, and a reused one may already be closed.
    """

    def __init__(
        self,
        hub_url: str,
        topic: str,
        publisher_key: str,
        *,
        max_request_bytes: int = 1_048_576,
        max_requests_per_second: float | None = None,
        private: bool = True,
        timeout: float = 10.0,
        session_factory: Callable[[], requests.Session] = requests.Session,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if max_requests_per_second is not None and not max_requests_per_second * 10 >= 3:
            raise ChannelConfigError(
                "Mercure request rate must allow three requests every 10 seconds: "
                f"{max_requests_per_second} per second cannot end a segment in time."
            )
        if not hub_url or not topic:
            raise ChannelConfigError("MercureChannel needs a hub URL and a topic.")
        super().__init__(budget=max_request_bytes)
        self.hub_url = hub_url
        self.topic = topic
        self.private = private
        self.timeout = timeout
        self.token = publisher_token(publisher_key, [topic])
        self._interval = 1 / max_requests_per_second if max_requests_per_second else None
        self._session_factory = session_factory
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")  # when the next request may leave
        self._held = 0.0  # waiting not yet paid back by work
        self._resumed: float | None = None  # when the last wait ended
        # Everything but the data: ``topic=...&data=`` and ``&private=on``.
        fields = {"topic": topic, "data": ""} | ({"private": "on"} if private else {})
        self._fixed = len(urllib.parse.urlencode(fields))
        self._quoted: dict[str, int] = {}

    @classmethod
    def from_settings(cls, settings: Settings, thread_id: str, **options: Any) -> MercureChannel:
        """The thread's private topic ``<RELAYLINE_PUBLIC_URL>/threads/<id>`` on
        ``MERCURE_HUB_URL``, signed with ``MERCURE_PUBLISHER_JWT_KEY``."""
        config = settings.mercure
        if not config.configured:
            raise ChannelConfigError(
                "Mercure delivery needs MERCURE_HUB_URL, MERCURE_PUBLISHER_JWT_KEY and "
                "MERCURE_SUBSCRIBER_JWT_KEY."
            )
        assert config.hub_url and config.publisher_jwt_key  # configured says so
        return cls(
            config.hub_url,
            thread_topic(settings.public_url, thread_id),
            config.publisher_jwt_key,
            **options,
        )

    # hooks -----------------------------------------------------------------------

    def encode(self, type: str, envelope: str) -> str:
        return _LINE_BREAKS.sub(lambda match: f"\\u{ord(match.group()):04x}", envelope)

    def batch(self, items: Sequence[str]) -> str:
        return "[" + ",".join(items) + "]"

    def batch_bytes(self, items: Sequence[str]) -> int:
        """The exact length of the form-encoded request body."""
        punctuation = _QUOTED_PUNCTUATION * (len(items) + 1 if items else 2)
        return self._fixed + punctuation + sum(self._quoted_len(item) for item in items)

    def batch_size(self) -> int:
        # An open slot sends at once; a closed one lets events pack until it opens.
        if self._interval is None or self._clock() >= self._next:
            return 1
        return sys.maxsize

    def deliver(self, batch: str) -> None:
        self._quoted.clear()
        fields = {"topic": self.topic, "data": batch} | ({"private": "on"} if self.private else {})
        body = urllib.parse.urlencode(fields).encode("ascii")
        while True:
            self._wait_for_slot()
            status, retry_after = self._post(body)
            if status == 429:
                self._next = self._clock() + _retry_after(retry_after)
                continue
            if not 200 <= status < 300:
                raise PublishError(
                    f"Mercure hub refused the update: HTTP {status}.", retryable=status >= 500
                )
            if self._interval is not None:
                self._next = self._clock() + self._interval
            return

    # internals -------------------------------------------------------------------

    def _quoted_len(self, item: str) -> int:
        # Percent-encoding is per character, so a batch's length is the sum of its
        # items': remember each queued item's, or packing would re-encode the queue.
        size = self._quoted.get(item)
        if size is None:
            size = len(urllib.parse.quote_plus(item))
            if len(self._quoted) >= 256:  # fragment sizing probes many sizes
                self._quoted.clear()
            self._quoted[item] = size
        return size

    def _post(self, body: bytes) -> tuple[int, str | None]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Connection": "close",
        }
        # A session per publish: a pooled connection may be reused after the hub
        # closed it, and a publish is never retried.
        try:
            with self._session_factory() as session:
                response = session.post(
                    self.hub_url, data=body, headers=headers, timeout=self.timeout
                )
                return response.status_code, response.headers.get("Retry-After")
        except requests.RequestException as exc:
            raise PublishError(f"Mercure hub could not be reached: {exc}") from exc

    def _wait_for_slot(self) -> None:
        now = self._clock()
        if self._resumed is not None:  # work since the last wait pays waiting back
            self._held = max(0.0, self._held - (now - self._resumed))
            self._resumed = now
        wait = self._next - now
        if wait <= 0:
            return
        if self._held + wait > MAX_HOLD + 1e-9:  # 3 waits of 1/0.3 s are 10 s, not more
            raise PublishError(
                "Mercure streaming stopped: delivering within the hub limits would hold "
                "the run for more than 10 seconds."
            )
        self._sleep(wait)
        self._held += wait
        self._resumed = self._clock()
