"""Redis Pub/Sub: RedisChannel publishes a segment, RedisChannelReader relays one
segment to one SSE response (docs/reference/neuron-streaming-spec.md sections 3.2 and 4).

- **Ordering:** Pub/Sub keeps one connection's publish order; each PUBLISH carries one
  envelope, so the reader expects sequences in order and treats a jump as loss.
- **Replay/history:** none. A subscriber that arrives late misses what was published
  before; ``await_listener`` waits, before the first publish only, for an exact-channel
  subscriber (``PUBSUB NUMSUB``; pattern subscribers are not counted).
- **Maximum payload:** unbounded by default (no fragments); ``max_message_bytes``
  fragments larger events, and the reader reassembles them.
- **Configuration:** a connected ``redis.Redis`` (never a pipeline), the channel name
  (``relayline:relay:<relay id>``), ``await_listener`` seconds (0 in the relay task: the
  web confirms its subscription before it enqueues the job).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any, cast

import redis
from redis.client import PubSub

from relayline.channels.base import AbstractChannel
from relayline.channels.envelope import Envelope, is_terminal
from relayline.channels.errors import (
    ChannelConfigError,
    ChannelReadError,
    EnvelopeError,
    PublishError,
    SegmentReplacedError,
)
from relayline.channels.fragments import Fragment, join_parts
from relayline.shared.events import ProtocolEvent

#: seconds between ``PUBSUB NUMSUB`` polls while awaiting a listener
NUMSUB_POLL = 0.05


class RedisChannel(AbstractChannel):
    """Publishes each envelope (or fragment) as one Pub/Sub message on ``name``."""

    def __init__(
        self,
        client: redis.Redis,
        name: str,
        await_listener: float = 0.0,
        *,
        max_message_bytes: int | None = None,
    ) -> None:
        # batch_size stays 1: the reader parses exactly one envelope per message.
        super().__init__(budget=max_message_bytes)
        if await_listener < 0:
            raise ChannelConfigError("RedisChannel await_listener must be 0 or more seconds.")
        self.client = client
        self.name = name
        self.await_listener = await_listener
        self._awaited = False

    def deliver(self, batch: str) -> None:
        # A pipeline would queue the PUBLISH until someone executes it: refuse outright.
        if isinstance(self.client, redis.client.Pipeline) or hasattr(self.client, "command_stack"):
            raise PublishError(
                "Redis streaming cannot run inside a transaction or pipeline.", retryable=False
            )
        if not self._awaited:
            self._awaited = True
            self._await_listener()
        try:
            result = self.client.publish(self.name, batch)
        except redis.RedisError as exc:
            raise PublishError(f"Redis streaming publish failed: {exc}") from exc
        # The count of receivers, 0 included, is success: Pub/Sub keeps nothing anyway.
        if not isinstance(result, int) or isinstance(result, bool):
            raise PublishError(f"Redis streaming publish failed: unexpected reply {result!r}.")

    def _await_listener(self) -> None:
        if self.await_listener <= 0:
            return
        deadline = time.monotonic() + self.await_listener
        while True:
            try:
                counts = cast(list[tuple[Any, int]], self.client.pubsub_numsub(self.name))
            except redis.RedisError as exc:
                raise PublishError(f"Redis streaming could not count subscribers: {exc}") from exc
            # Summed, never looked up by name: a client may prefix or re-encode names.
            if sum(int(count) for _, count in counts) >= 1:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return  # publish anyway: a late reader refuses the segment itself
            time.sleep(min(NUMSUB_POLL, left))


class Heartbeat:
    """A tick of silence from ``RedisChannelReader.events``: time to send an SSE comment."""

    def __repr__(self) -> str:
        return "HEARTBEAT"


HEARTBEAT = Heartbeat()


class RedisChannelReader:
    """Relays one segment published on ``name``: its events in order, then its terminal.

    ``timeout`` is the seconds of silence before giving up; set it above the longest
    silent step. Subscribe (``subscribe()`` or ``with reader:``) *before* dispatching
    the job that publishes, or the job may publish to nobody. The subscription uses its
    own connection, always closed at the end, so unread messages never answer later
    commands; the client itself stays usable.
    """

    def __init__(self, client: redis.Redis, name: str, timeout: float = 300.0) -> None:
        if timeout <= 0:
            raise ChannelConfigError("RedisChannelReader timeout must be positive seconds.")
        self.client = client
        self.name = name
        self.timeout = timeout
        self._pubsub: PubSub | None = None
        self._confirmed = False
        self._relay: _Relay | None = None

    def __enter__(self) -> RedisChannelReader:
        self.subscribe()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def subscribe(self, *, confirm: bool = True) -> None:
        """SUBSCRIBE and (``confirm``) wait for the server's confirmation, so that from
        now on a publisher's NUMSUB counts this reader. Idempotent.

        ``confirm=False`` only sends the command, so that the caller can enqueue the
        publishing job during the round trip and ``confirm()`` after: Redis answers a
        connection's commands in order, so the confirmation still precedes every
        message, and a publisher that awaits a listener never publishes to nobody."""
        if self._pubsub is None:
            self._pubsub = self.client.pubsub()  # type: ignore[no-untyped-call]
            self._confirmed = False
            try:
                self._pubsub.subscribe(self.name)
            except BaseException:
                self.close()
                raise
        if confirm:
            self.confirm()

    def confirm(self) -> None:
        """Wait for the confirmation of ``subscribe(confirm=False)``; idempotent."""
        if self._confirmed:
            return
        if self._pubsub is None:
            raise ChannelReadError(f"Redis channel {self.name} was never subscribed.")
        try:
            deadline = time.monotonic() + self.timeout
            while (left := deadline - time.monotonic()) > 0:
                message = self._pubsub.get_message(timeout=left)
                if message is not None and message["type"] == "subscribe":
                    self._confirmed = True
                    return
            raise ChannelReadError(
                f"Redis channel {self.name} did not confirm the subscription within "
                f"the {self.timeout:g}-second timeout."
            )
        except BaseException:
            self.close()
            raise

    @property
    def sequence(self) -> int:
        """The sequence of the last event ``events()`` yielded (-1 before the first): the
        cursor a client resumes the segment's log from."""
        return -1 if self._relay is None else self._relay.next - 1

    def close(self) -> None:
        """Drop the subscription and close its connection."""
        if self._pubsub is not None:
            pubsub, self._pubsub = self._pubsub, None
            pubsub.close()

    def events(
        self, heartbeat: float | None = None
    ) -> Generator[ProtocolEvent | Heartbeat, None, None]:
        """Yield the segment's events in order, its terminal last (``stream.completed``,
        ``stream.interrupted`` or ``stream.failed``), and with ``heartbeat`` seconds
        a HEARTBEAT after each such stretch of silence. Raises ChannelReadError on a
        late start, a segment switch, lost events or ``timeout`` seconds of silence.
        The subscription is closed when the generator ends, fails or is closed."""
        self.subscribe()
        assert self._pubsub is not None  # subscribe() set it or raised
        pubsub = self._pubsub
        relay = self._relay = _Relay(self.name)
        try:
            heard = ticked = time.monotonic()
            while True:
                now = time.monotonic()
                wait = max(0.0, heard + self.timeout - now)
                if heartbeat is not None:
                    wait = min(wait, max(0.0, max(heard, ticked) + heartbeat - now))
                # Read before judging silence: a slow SSE client may have held this
                # generator while messages queued up on the connection.
                message = pubsub.get_message(timeout=wait)
                if message is None or message["type"] != "message":
                    now = time.monotonic()
                    if now - heard >= self.timeout:
                        raise ChannelReadError(
                            f"Nothing arrived on Redis channel {self.name} within the "
                            f"{self.timeout:g}-second timeout."
                        )
                    if heartbeat is not None and now - max(heard, ticked) >= heartbeat:
                        ticked = now
                        yield HEARTBEAT
                    continue
                heard = time.monotonic()
                event = relay.take(message["data"])
                if event is not None:
                    yield event
                    if is_terminal(event.type):
                        return
        finally:
            self.close()

    def listen(self, on_event: Callable[[ProtocolEvent], object]) -> ProtocolEvent:
        """Call ``on_event`` for each event and the terminal; return the terminal. An
        error from ``on_event`` (the client went away) ends the subscription and is
        re-raised after cleanup."""
        with contextlib.closing(self.events()) as events:
            for item in events:
                if isinstance(item, ProtocolEvent):
                    on_event(item)
                    if is_terminal(item.type):
                        return item
        raise AssertionError("unreachable: events() ends with a terminal or raises")


class _Relay:
    """Strict in-order reading of one segment: Pub/Sub never reorders one publisher, so
    anything but the next sequence (or the next fragment) means a message was lost."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stream_id: str | None = None
        self.next = 0
        self.parts: list[str] = []
        self.first: Fragment | None = None

    def take(self, raw: str | bytes) -> ProtocolEvent | None:
        try:
            envelope = Envelope.parse(raw)
            fragment = Fragment.parse(envelope.data) if envelope.is_fragment else None
        except EnvelopeError as exc:
            raise ChannelReadError(
                f"Redis channel {self.name} carried an invalid frame: {exc}."
            ) from exc
        sid = envelope.stream_id
        if self.stream_id is None:
            if envelope.sequence != 0 or (fragment is not None and fragment.index != 0):
                raise ChannelReadError(
                    f"Segment {sid} on Redis channel {self.name} started before the "
                    "reader subscribed."
                )
            self.stream_id = sid
        elif sid != self.stream_id:
            raise SegmentReplacedError(
                f"Segment {self.stream_id} on Redis channel {self.name} ended without a "
                "terminal event: another segment started."
            )
        if fragment is None:
            in_order = self.first is None
        else:
            expect = self.first or fragment
            in_order = fragment.index == len(self.parts) and (expect.event, expect.total) == (
                fragment.event,
                fragment.total,
            )
        if envelope.sequence != self.next or not in_order:
            raise ChannelReadError(
                f"Segment {sid} on Redis channel {self.name} lost events: expected sequence "
                f"{self.next}, got {envelope.sequence}."
            )
        if fragment is None:
            event_type, data = envelope.type, envelope.data
        else:
            self.first = self.first or fragment
            self.parts.append(fragment.part)
            if len(self.parts) < fragment.total:
                return None
            event_type, parts, self.parts, self.first = fragment.event, self.parts, [], None
            data = self._join(sid, parts)
        self.next += 1
        try:
            return Envelope(sid, envelope.sequence, event_type, data).to_event()
        except EnvelopeError as exc:
            raise ChannelReadError(f"Segment {sid} on Redis channel {self.name}: {exc}.") from exc

    def _join(self, sid: str, parts: list[str]) -> object:
        try:
            return join_parts(parts)
        except EnvelopeError as exc:
            raise ChannelReadError(f"Segment {sid} on Redis channel {self.name}: {exc}.") from exc
