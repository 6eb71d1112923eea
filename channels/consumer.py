"""A Python consumer of channel envelopes, the twin of the browser one
(docs/reference/neuron-streaming-spec.md section 2.6).

It orders envelopes by sequence per segment (``streamId``), reassembles fragments,
drops duplicates, and reports a *gap* for anything it cannot vouch for: malformed or
conflicting frames, over-full buffers, or events still missing ``gap_timeout`` seconds
after the last progress. Given ``recover`` (e.g. ``relayline.channels.recovery.EnvelopesOverHttp``,
the web's ``GET .../segments/<streamId>/envelopes``), a hole (a later sequence arrived
while an earlier one is missing, as after dropped events or a late subscription) is
first filled from the segment's log: asked at once, then again with backoff, at most
``recover_attempts`` times without progress; only a log that cannot supply it
(LogGoneError) or the deadline makes it a gap. A gap closes the consumer; the
application reconciles from history and makes a new one. Transports (Pusher batches,
Mercure replays) may reorder or repeat frames; the consumer is what makes them a clean,
ordered event stream.

There are no timers: the deadline is checked on every ``feed`` and on ``poll()``, with
an injectable clock, so a loop waiting on a transport calls ``poll`` when it wakes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relayline.channels.envelope import Envelope, encode_json, utf8_len
from relayline.channels.errors import EnvelopeError, GapError
from relayline.channels.fragments import Fragment, join_parts
from relayline.channels.stream.log import LogGoneError
from relayline.shared.ids import SEGMENT_ID

MAX_ACTIVE_STREAMS = 64
MAX_KNOWN_STREAMS = 1024
MAX_QUEUED_EVENTS = 1024
MAX_BUFFERED_PARTS = 4096
MAX_BUFFERED_BYTES = 8 * 1024 * 1024
GAP_TIMEOUT = 30.0
#: asks of the log for one hole that bring nothing new before the consumer waits for
#: the deadline alone
RECOVER_ATTEMPTS = 5
#: seconds before the second ask; doubled for each one after
RECOVER_BACKOFF = 0.1

Frame = str | bytes | Mapping[str, Any]
#: ``recover(segment_id, after)``: the envelopes the segment's log keeps after sequence
#: ``after`` (any number of them, in order). Raises LogGoneError when the log cannot
#: supply them; any other error is a failed ask, asked again later.
Recover = Callable[[str, int], Sequence[Frame]]


@dataclasses.dataclass
class _Pending:
    """One sequence being collected: a plain event, or the parts of a fragmented one."""

    event: str
    fragmented: bool
    total: int = 1
    raw: str = ""
    parts: dict[int, str] = dataclasses.field(default_factory=dict)
    size: int = 0

    @property
    def complete(self) -> bool:
        return not self.fragmented or len(self.parts) == self.total


@dataclasses.dataclass
class _Segment:
    next: int = 0
    pending: dict[int, _Pending] = dataclasses.field(default_factory=dict)
    #: asks of the log since the last progress, and when the next one is due
    asks: int = 0
    ask_at: float = 0.0

    @property
    def holed(self) -> bool:
        """A later sequence arrived while ``next`` is still missing (drained: ``next``
        is absent or incomplete, and a transport delivers each event's parts in order)."""
        return any(sequence > self.next for sequence in self.pending)


class Consumer:
    """Feed it envelopes in any order; it delivers each logical event once, in order.

    ``on_event(envelope)`` gets every logical event with its original type and data,
    terminal included (which then closes that segment). ``on_gap(reason)`` is called
    once when a gap closes the consumer; without it, ``feed``/``poll`` raise GapError.
    ``segment_id`` selects one segment and ignores frames of others.
    """

    def __init__(
        self,
        on_event: Callable[[Envelope], object] | None = None,
        on_gap: Callable[[str], object] | None = None,
        *,
        segment_id: str | None = None,
        gap_timeout: float = GAP_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        recover: Recover | None = None,
        recover_attempts: int = RECOVER_ATTEMPTS,
        recover_backoff: float = RECOVER_BACKOFF,
    ) -> None:
        if segment_id is not None and not SEGMENT_ID.fullmatch(segment_id):
            raise ValueError(f"Invalid stream id selection {segment_id!r}: use 32 lowercase hex.")
        self.on_event = on_event
        self.on_gap = on_gap
        self.segment_id = segment_id
        self.gap_timeout = gap_timeout
        self.clock = clock
        self.recover = recover
        self.recover_attempts = recover_attempts
        self.recover_backoff = recover_backoff
        self.closed = False
        #: the reason of the gap that closed the consumer, if any
        self.gap: str | None = None
        #: segments that delivered their terminal; late duplicates cannot reopen them
        self.finished: set[str] = set()
        #: when missing events become a gap, or None while nothing is pending
        self.deadline: float | None = None
        self._segments: dict[str, _Segment] = {}
        self._events = self._parts = self._bytes = 0
        self._inbox: list[Frame] = []
        self._busy = False

    # feeding -----------------------------------------------------------------------

    def feed(self, frame: Frame) -> list[Envelope]:
        """Take one envelope (JSON text or decoded object); return what it delivered.
        A callback may feed more frames: they are queued, never handled recursively."""
        self._inbox.append(frame)
        if self._busy:
            return []
        return self._run()

    def _run(self) -> list[Envelope]:
        """Handle the inbox, then fill holes from the log while asks are due."""
        delivered: list[Envelope] = []
        self._busy = True
        try:
            while not self.closed:
                if self._inbox:
                    self._check_deadline()
                    if not self.closed:
                        delivered += self._take(self._inbox.pop(0))
                    continue
                filled = self._fill()
                if filled is None:
                    break
                delivered += filled
        finally:
            self._busy = False
            self._inbox.clear()
        return delivered

    def feed_batch(self, update: str | bytes) -> list[Envelope]:
        """Take one JSON array of envelopes (a CallbackChannel delivery, a Mercure update)."""
        try:
            frames = json.loads(update)
        except ValueError:
            frames = None
        if not isinstance(frames, list):
            self._fail("Invalid channel envelope")
            return []
        delivered: list[Envelope] = []
        for frame in frames:
            if not isinstance(frame, Mapping):
                self._fail("Invalid channel envelope")
                break
            delivered += self.feed(frame)
        return delivered

    def poll(self) -> list[Envelope]:
        """Report a gap if missing events outlived the deadline; ask the log again for
        a hole when an ask is due. Returns what that delivered."""
        if self.closed or self._busy:
            return []
        self._check_deadline()
        return [] if self.closed else self._run()

    def close(self) -> None:
        """Stop for good, dropping buffered frames; no gap is reported."""
        self.closed = True
        self._segments.clear()
        self.deadline = None

    # internals -------------------------------------------------------------------------

    def _check_deadline(self) -> None:
        if self.deadline is not None and self.clock() >= self.deadline:
            self._fail("Missing channel events")

    def _fail(self, reason: str) -> None:
        if self.closed:
            return
        self.close()
        self.gap = reason
        if self.on_gap is None:
            raise GapError(reason)
        self.on_gap(reason)

    def _fill(self) -> list[Envelope] | None:
        """Ask the log for one holed segment's missing events, if an ask is due; None
        when nothing was asked."""
        if self.recover is None:
            return None
        now = self.clock()
        for sid, segment in self._segments.items():
            if segment.holed and segment.asks < self.recover_attempts and now >= segment.ask_at:
                return self._ask(sid, segment, now)
        return None

    def _ask(self, sid: str, segment: _Segment, now: float) -> list[Envelope]:
        assert self.recover is not None
        before = segment.next
        segment.asks += 1
        segment.ask_at = now + self.recover_backoff * 2 ** (segment.asks - 1)
        try:
            frames = self.recover(sid, before - 1)
        except LogGoneError:
            self._fail("Missing channel events")
            return []
        except Exception:  # a failed ask (network, a 5xx): asked again when due
            return []
        delivered: list[Envelope] = []
        for frame in frames:
            if self.closed or sid in self.finished:
                break
            delivered += self._take(frame, recovered=True)
        if segment.next > before:
            segment.asks, segment.ask_at = 0, now  # progress: the rest is asked at once
        return delivered

    def _take(self, frame: Frame, *, recovered: bool = False) -> list[Envelope]:
        try:
            envelope = Envelope.parse(frame)
        except EnvelopeError:
            self._fail("Invalid channel envelope")
            return []
        sid = envelope.segment_id
        if (self.segment_id is not None and sid != self.segment_id) or sid in self.finished:
            return []
        segment = self._segments.get(sid)
        if segment is None:
            if (
                len(self._segments) >= MAX_ACTIVE_STREAMS
                or len(self._segments) + len(self.finished) >= MAX_KNOWN_STREAMS
            ):
                self._fail("Channel stream limit exceeded")
                return []
            segment = self._segments[sid] = _Segment()
        if not self._buffer(segment, envelope, recovered):
            return []
        return self._drain(sid, segment)

    def _buffer(self, segment: _Segment, envelope: Envelope, recovered: bool = False) -> bool:
        """Queue the frame; False when it was ignored or caused a gap. A ``recovered``
        whole event (the log keeps events whole) replaces fragments collected so far."""
        fragment: Fragment | None = None
        if envelope.is_fragment:
            try:
                fragment = Fragment.parse(envelope.data)
            except EnvelopeError:
                self._fail("Invalid channel fragment")
                return False
        if envelope.sequence < segment.next:
            return False  # already delivered
        event = fragment.event if fragment else envelope.type
        pending = segment.pending.get(envelope.sequence)
        if recovered and fragment is None and pending is not None and pending.fragmented:
            self._release(segment.pending.pop(envelope.sequence))
            pending = None
        fresh = pending is None
        if pending is None:
            if self._events + 1 > MAX_QUEUED_EVENTS:
                self._fail("Channel buffer limit exceeded")
                return False
            pending = _Pending(event, fragment is not None, fragment.total if fragment else 1)
            if fragment is None:
                pending.raw = encode_json(envelope.data)
            segment.pending[envelope.sequence] = pending
            self._events += 1
        elif (
            pending.event != event
            or pending.fragmented != (fragment is not None)
            or (fragment is not None and pending.total != fragment.total)
            or (fragment is None and pending.raw != encode_json(envelope.data))
        ):
            self._fail("Conflicting channel events")
            return False
        if fragment is None:
            if not fresh:
                return False  # an identical duplicate
            size, parts = utf8_len(pending.raw) + utf8_len(event), 0
        else:
            known = pending.parts.get(fragment.index)
            if known is not None:
                if known != fragment.part:
                    self._fail("Conflicting channel events")
                return False
            pending.parts[fragment.index] = fragment.part
            size, parts = len(fragment.part) + utf8_len(event), 1
        pending.size += size
        self._parts += parts
        self._bytes += size
        if self._parts > MAX_BUFFERED_PARTS or self._bytes > MAX_BUFFERED_BYTES:
            self._fail("Channel buffer limit exceeded")
            return False
        return True

    def _release(self, pending: _Pending) -> None:
        self._events -= 1
        self._parts -= len(pending.parts)
        self._bytes -= pending.size

    def _drain(self, sid: str, segment: _Segment) -> list[Envelope]:
        delivered: list[Envelope] = []
        while not self.closed:
            pending = segment.pending.get(segment.next)
            if pending is None or not pending.complete:
                break
            del segment.pending[segment.next]
            self._release(pending)
            try:  # plain payloads too are decoded afresh: a snapshot of what arrived
                data = (
                    join_parts([pending.parts[i] for i in range(pending.total)])
                    if pending.fragmented
                    else json.loads(pending.raw)
                )
            except EnvelopeError as exc:
                self._fail(exc.message)
                break
            envelope = Envelope(sid, segment.next, pending.event, data)
            segment.next += 1
            delivered.append(envelope)
            if envelope.is_terminal:
                for rest in segment.pending.values():
                    self._release(rest)
                del self._segments[sid]
                self.finished.add(sid)
            if self.on_event is not None:
                try:
                    self.on_event(envelope)
                except BaseException:
                    self.close()
                    raise
            if envelope.is_terminal:
                break
        self._arm(progress=bool(delivered))
        return delivered

    def _arm(self, progress: bool) -> None:
        """Start the gap deadline when something is pending; only progress renews it."""
        if self.closed or not any(s.pending for s in self._segments.values()):
            self.deadline = None
        elif progress or self.deadline is None:
            self.deadline = self.clock() + self.gap_timeout
