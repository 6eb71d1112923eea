"""PusherChannel: a segment through the Pusher HTTP API's ``batch_events``
(docs/reference/neuron-streaming-spec.md section 3.3).

- **Ordering:** kept within one batch only; batches may overtake each other, so
  consumers reorder by ``sequence`` (``relayline.channels.Consumer``, the JS consumer).
- **Replay/history:** none. A subscriber that arrives late misses earlier events.
- **Maximum payload:** 10 events a request, 10,000 bytes a request (the SDK's body,
  wrapper included) and 10,000 bytes of envelope an event; larger events fragment.
  ``private-encrypted-*`` channels allow 3,698 bytes of plaintext envelope (the
  reference's bound, leaving room for the nonce and base64 ciphertext).
- **Configuration:** an injected ``pusher.Pusher`` (app id, key, secret, host, port,
  timeout and the encryption master key all belong to the SDK) and the channel name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pusher
import pusher.crypto
import pusher.errors

from relayline.channels.base import AbstractChannel
from relayline.channels.envelope import utf8_len
from relayline.channels.errors import ChannelConfigError, EnvelopeError, PublishError
from relayline.shared.ids import THREAD_ID

if TYPE_CHECKING:
    from relayline.shared.settings import Settings

CHANNEL_NAME = re.compile(r"[-a-zA-Z0-9_=@,.;]{1,164}")
ENCRYPTED_PREFIX = "private-encrypted-"
#: Pusher's per-event data limit, and its multi-tenant clusters' events per request
EVENT_LIMIT = 10_000
MAX_BATCH = 10
#: The reference's size of ``{"nonce":"\\/"*32,"ciphertext":""}`` in PHP JSON: the budget
#: keeps its worst case (every base64 character escaped, twice) under the event limit.
_NONCE_OVERHEAD = 92
ENCRYPTED_EVENT_BUDGET = 3 * ((EVENT_LIMIT - _NONCE_OVERHEAD) // 8) - 16
#: The SDK's request body with no events: ``json.dumps`` with its default separators.
_EMPTY_BODY = len('{"batch": []}')
#: Bytes an encrypted item's data takes in the body besides the ciphertext:
#: ``"{\\"nonce\\": \\"<32 base64>\\", \\"ciphertext\\": \\"...\\"}"``.
_ENCRYPTED_DATA = len(json.dumps(json.dumps({"nonce": "A" * 32, "ciphertext": ""})))


def thread_channel(thread_id: str, *, encrypted: bool = False) -> str:
    """The channel a thread's segments go to (and that ``/pusher/auth`` authorizes)."""
    if not THREAD_ID.fullmatch(thread_id):
        raise ChannelConfigError(f"Invalid thread id for a Pusher channel: {thread_id!r}.")
    return f"{ENCRYPTED_PREFIX if encrypted else 'private-'}thread-{thread_id}"


def pusher_client(settings: Settings, *, ssl: bool | None = None) -> Any:
    """A ``pusher.Pusher`` from the settings. Without an explicit ``ssl``, TLS is used
    unless a port other than 443 is set (a local soketi or Reverb speaks plain HTTP)."""
    config = settings.pusher
    if not config.configured:
        raise ChannelConfigError(
            "Pusher delivery needs PUSHER_APP_ID, PUSHER_KEY and PUSHER_SECRET."
        )
    if ssl is None:
        ssl = config.port in (None, 443)
    try:
        return pusher.Pusher(
            app_id=config.app_id,
            key=config.key,
            secret=config.secret,
            host=config.host,
            port=config.port,
            ssl=ssl,
            encryption_master_key_base64=config.encryption_master_key_base64,
        )
    except ValueError as exc:  # a master key that is not 32 bytes of base64
        raise ChannelConfigError(f"Invalid Pusher settings: {exc}") from exc


def _master_key(client: Any) -> bytes | None:
    # The SDK keeps the parsed key only on its inner client; we need it because
    # trigger_batch(already_encoded=True) skips the SDK's own encryption.
    inner = getattr(client, "_pusher_client", client)
    key = getattr(inner, "_encryption_master_key", None)
    return key if isinstance(key, bytes) else None


class PusherChannel(AbstractChannel):
    """Publishes a segment on one Pusher channel in signed ``batch_events`` requests.

    Each item is ``{"channel", "name": <envelope type>, "data": <envelope JSON text>}``.
    Partial batches wait for more events or the segment end; ``batch_size=1`` sends
    each event at once. ``private-encrypted-*`` channels need the client's master key
    and are refused without one, so plaintext can never leave by mistake.
    """

    def __init__(
        self,
        client: Any,
        channel: str,
        *,
        max_request_bytes: int = EVENT_LIMIT,
        batch_size: int = MAX_BATCH,
    ) -> None:
        if not isinstance(channel, str) or not CHANNEL_NAME.fullmatch(channel):
            raise ChannelConfigError("Invalid Pusher channel name.")
        if not 1 <= batch_size <= MAX_BATCH:
            raise ChannelConfigError(f"Pusher batch size must be between 1 and {MAX_BATCH}.")
        if max_request_bytes <= _EMPTY_BODY:
            raise ChannelConfigError("Pusher request byte limit must leave room for events.")
        self.encrypted = channel.startswith(ENCRYPTED_PREFIX)
        self._key = _master_key(client) if self.encrypted else None
        if self.encrypted and self._key is None:
            raise ChannelConfigError(
                f"Pusher channel {channel} is end-to-end encrypted but the client has no "
                "encryption master key (PUSHER_ENCRYPTION_MASTER_KEY_BASE64)."
            )
        super().__init__(
            budget=max_request_bytes,
            event_budget=ENCRYPTED_EVENT_BUDGET if self.encrypted else EVENT_LIMIT,
            batch_size=batch_size,
        )
        self.client = client
        self.channel = channel
        self._sizes: dict[str, int] = {}

    @classmethod
    def from_settings(
        cls, settings: Settings, thread_id: str, *, client: Any = None, **options: Any
    ) -> PusherChannel:
        """The thread's channel: ``private-encrypted-thread-<id>`` when a master key is
        configured, else ``private-thread-<id>``. Pass ``client`` (``pusher_client``)
        to share one SDK client, and its connection pool, across segments."""
        return cls(
            client if client is not None else pusher_client(settings),
            thread_channel(thread_id, encrypted=settings.pusher.encrypted),
            **options,
        )

    # hooks -----------------------------------------------------------------------

    def encode(self, type: str, envelope: str) -> str:
        if not 1 <= utf8_len(type) <= 200 or type.startswith("pusher:"):
            raise EnvelopeError(
                "Pusher event names must be 1-200 bytes and cannot start with pusher:."
            )
        # Exactly the SDK's serialisation of one item, so ``batch`` is the real body.
        return json.dumps({"channel": self.channel, "name": type, "data": envelope})

    def batch(self, items: Sequence[str]) -> str:
        return '{"batch": [' + ", ".join(items) + "]}"

    def batch_bytes(self, items: Sequence[str]) -> int:
        if not self.encrypted:
            return len(self.batch(items))  # ASCII: json.dumps escapes the rest
        return (
            _EMPTY_BODY
            + sum(self._encrypted_bytes(item) for item in items)
            + 2 * max(0, len(items) - 1)
        )

    def deliver(self, batch: str) -> None:
        self._sizes.clear()
        events: list[dict[str, str]] = json.loads(batch)["batch"]
        if self._key is not None:
            for event in events:
                sealed = pusher.crypto.encrypt(self.channel, event["data"], self._key)
                event["data"] = json.dumps(sealed, ensure_ascii=False)
        try:
            result = self.client.trigger_batch(events, already_encoded=True)
        except (
            pusher.errors.PusherBadRequest,
            pusher.errors.PusherBadAuth,
            pusher.errors.PusherForbidden,
        ) as exc:
            raise PublishError(f"Pusher refused the batch: {exc}", retryable=False) from exc
        except Exception as exc:  # the SDK's backends raise their own transport errors
            raise PublishError(f"Pusher batch delivery failed: {exc}") from exc
        # soketi reports a bad signature as HTTP 200 with an error body.
        if isinstance(result, dict) and "error" in result:
            raise PublishError(f"Pusher refused the batch: {result['error']}", retryable=False)

    # internals -------------------------------------------------------------------

    def _encrypted_bytes(self, item: str) -> int:
        """The item's exact size in the body once its data is sealed: a 24-byte nonce
        and the plaintext plus a 16-byte tag, both base64 (never escaped by JSON)."""
        size = self._sizes.get(item)
        if size is None:
            decoded = json.loads(item)
            plain = utf8_len(decoded["data"])
            decoded["data"] = ""
            ciphertext = 4 * -(-(plain + 16) // 3)
            size = len(json.dumps(decoded)) - 2 + _ENCRYPTED_DATA + ciphertext
            if len(self._sizes) >= 1024:  # fragment sizing probes many sizes
                self._sizes.clear()
            self._sizes[item] = size
        return size
