"""The durable log of a segment: every envelope a channel builds, terminal included, in a
Redis Stream per segment, so a reload, a dropped connection or a second viewer can read
a run's output after it was sent (docs/reference/resume-and-cancel.md section 8.1).

- **Keys:** ``relayline:{seg:<stream id>}:log`` (a Stream, field ``e``); per thread,
  ``relayline:{thread:<id>}:active`` (``<protocol>:<stream id>`` of the running
  segment) and ``relayline:{thread:<id>}:latest`` (the newest segment while its log is
  kept), ``relayline:{thread:<id>}:segments`` (every segment id whose log may be kept:
  what deleting the thread erases). The hash tags keep each one's keys in one Redis
  Cluster slot; a segment's and a thread's keys are never touched in one command.
- **Lifetime:** the web announces a segment when it enqueues its job (``announce``), and
  the log's first entry makes it the thread's active and latest segment (again, or for
  the first time when nobody announced it: a timer, a recovery); the first entry sets a
  hard age cap (``max_age``) and every entry a length cap (``max_events`` envelopes,
  trimmed in whole entries); the terminal entry shortens the log's lifetime and the
  latest pointer's to ``retention`` and clears the active pointer, each only while it
  still names this segment, so a late writer never touches a newer segment.
- **Fencing:** every append carries its writer's epoch (the run's attempt it holds) and
  is refused, atomically in the script that adds it, once the segment's fence names a
  newer attempt (``FencedOutError``). The process that takes a lost run over
  (``take_over``) raises the fence of the lost writer's segment and appends its last
  entry there, a ``stream.replaced`` notice naming the segment that goes on, so readers
  of the old segment learn at once that the run continues elsewhere.
- **Entries:** the envelope texts exactly as built, those a worker wrote within one
  ``linger`` (``LogBatching``) in one entry, joined by newlines; readers split them
  (``split_entry``). Fragments stay a transport concern of Pusher and Mercure and are
  never logged.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Final, cast

import redis
from redis.client import Pipeline

from relayline.channels.envelope import REPLACED, Envelope
from relayline.channels.errors import ChannelConfigError, ChannelReadError, SegmentReplacedError
from relayline.channels.keys import active_key, fence_key, latest_key, log_key, segments_key
from relayline.channels.stream.flusher import FLUSHER, Flusher
from relayline.channels.stream.group_commit import writer_for
from relayline.shared.errors import FencedOutError
from relayline.shared.settings import Settings

logger = logging.getLogger("relayline.channel")

FIELD: Final = "e"
#: between the envelopes of one entry: compact JSON never holds a raw newline
SEPARATOR: Final = "\n"
_FIELD: Final = FIELD.encode()  # as redis-py returns field names

# At the terminal: the thread's active pointer goes and its latest pointer is kept only
# for the retention, each only while it still names this segment (a late writer never
# touches a newer one). Both keys carry the thread's hash tag: one slot, one script.
_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
return 0
"""


#: An entry, unless the segment's fence (KEYS[2]) names an attempt newer than the
#: writer's (ARGV[1]): then nothing is written and the reply is the FENCED error.
#: ARGV[2] the entry, ARGV[3] the entries kept (exact MAXLEN), ARGV[4] the log's lifetime
#: to set (0: leave it).
_APPEND: Final = """
local fence = redis.call('GET', KEYS[2])
if fence and tonumber(fence) > tonumber(ARGV[1]) then
  return redis.error_reply('FENCED ' .. fence)
end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '*', 'e', ARGV[2])
if ARGV[4] ~= '0' then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
return 1
"""
#: The fence of a segment raised to ARGV[1] (never lowered). With ARGV[2] (the
#: segment's id) and ARGV[3] (the segment that goes on), the lost writer's segment also
#: gets its last entry: the ``stream.replaced`` notice, numbered after the last envelope
#: kept (0 for a log not begun), unless the segment ended. ARGV[4]: the keys' lifetime.
_TAKE_OVER: Final = """
local fence = redis.call('GET', KEYS[2])
if fence and tonumber(fence) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[4])
if ARGV[2] == '' then return 1 end
local sequence = 0
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then
  local tail = string.match(last[1][2][2], '[^\\n]*$')
  if string.find(tail, '"type":"stream.completed"', 1, true)
     or string.find(tail, '"type":"stream.interrupted"', 1, true)
     or string.find(tail, '"type":"stream.failed"', 1, true) then
    return 1
  end
  sequence = tonumber(string.match(tail, '"sequence":(%d+)')) + 1
end
redis.call('XADD', KEYS[1], '*', 'e', '{"streamId":"' .. ARGV[2] .. '","sequence":' ..
  sequence .. ',"type":"' .. ARGV[5] .. '","data":{"newer":"' .. ARGV[3] ..
  '","attempt":' .. ARGV[1] .. '}}')
if not last[1] then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
return 2
"""


@dataclasses.dataclass(frozen=True)
class LogLimits:
    """How long segments are kept: ``retention`` seconds after the terminal, at most
    ``max_age`` seconds in all, at most about ``max_events`` entries."""

    retention: float = 600.0
    max_age: float = 3600.0
    max_events: int = 50_000

    def __post_init__(self) -> None:
        if self.retention <= 0 or self.max_age <= 0 or self.max_events < 1:
            raise ChannelConfigError("Segment log retention, age and length must be positive.")

    @classmethod
    def from_settings(cls, settings: Settings) -> LogLimits:
        return cls(settings.stream_retention, settings.stream_max_age, settings.stream_max_events)


@dataclasses.dataclass(frozen=True)
class ActiveSegment:
    """A thread's active segment: its stream id and the protocol its events speak (a
    resuming client gets only a segment in its own protocol)."""

    protocol: str
    segment_id: str

    @property
    def pointer(self) -> str:
        return f"{self.protocol}:{self.segment_id}"

    @classmethod
    def parse(cls, pointer: str) -> ActiveSegment | None:
        protocol, _, segment_id = pointer.partition(":")
        return cls(protocol, segment_id) if protocol and segment_id else None


def announce(
    client: redis.Redis, thread_id: str, segment: ActiveSegment, limits: LogLimits
) -> None:
    """Record ``segment`` as the thread's active one (the web, at enqueue)."""
    pipe = client.pipeline(transaction=False)
    queue_announce(pipe, thread_id, segment, limits)
    pipe.execute()


def queue_announce(
    pipe: Pipeline, thread_id: str, segment: ActiveSegment, limits: LogLimits
) -> None:
    """``announce``'s commands, queued on a pipeline the caller executes."""
    keep = _seconds(limits.max_age + limits.retention)
    pipe.set(active_key(thread_id), segment.pointer, ex=_seconds(limits.max_age))
    pipe.sadd(segments_key(thread_id), segment.segment_id)
    pipe.expire(segments_key(thread_id), keep)


def forget_thread(client: redis.Redis, thread_id: str) -> int:
    """Erase everything kept in Redis for the thread: its segments' logs and pointers.
    Returns how many keys went."""
    ids = {m.decode() for m in cast(set[bytes], client.smembers(segments_key(thread_id)))}
    for pointer in (latest_segment(client, thread_id), active_segment(client, thread_id)):
        if pointer is not None:
            ids.add(pointer.segment_id)
    keys = [key for i in sorted(ids) for key in (log_key(i), fence_key(i))]
    keys += [active_key(thread_id), latest_key(thread_id), segments_key(thread_id)]
    # One key per call: the keys of different segments live in different cluster slots.
    return sum(int(cast(int, client.delete(key))) for key in keys)


def active_segment(client: redis.Redis, thread_id: str) -> ActiveSegment | None:
    """The thread's active segment, if one is running."""
    return _pointer(client, active_key(thread_id))


def latest_segment(client: redis.Redis, thread_id: str) -> ActiveSegment | None:
    """The thread's newest segment, running or ended within the retention."""
    return _pointer(client, latest_key(thread_id))


def _pointer(client: redis.Redis, key: str) -> ActiveSegment | None:
    found = cast(bytes | None, client.get(key))
    return ActiveSegment.parse(found.decode()) if found is not None else None


class LogGoneError(ChannelReadError):
    """The log no longer holds what a reader asked for (expired, or trimmed past its
    cursor): replaying from there would tear the segment."""


def entries(client: redis.Redis, segment_id: str) -> list[str]:
    """Every envelope the segment's log holds, in order (one string per envelope)."""
    rows = cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(log_key(segment_id)))
    return [text for _, fields in rows for text in split_entry(fields[_FIELD])]


def split_entry(value: bytes) -> list[str]:
    """The envelope texts of one log entry (a worker writes several per entry)."""
    return value.decode().split(SEPARATOR)


@dataclasses.dataclass(frozen=True)
class LogBatching:
    """How a worker batches envelopes into log entries (group commit): an envelope
    more than ``linger`` seconds after the last write goes out at once (in the caller,
    or with the next round of the process's GroupWriter when one is in flight); one
    sooner is handed to the process's flusher, which writes it after at most
    ``gather`` seconds (0: as soon as the write before it is done) together with every
    envelope that arrived meanwhile, as one entry of at most ``max_envelopes``
    envelopes or about ``max_chars`` characters. A terminal goes out at once, with
    what waits. So a lone event costs no wait, and a burst costs one round trip per
    write instead of one per event."""

    linger: float = 0.005
    max_chars: int = 256 * 1024
    max_envelopes: int = 1000
    gather: float = 0.0

    def __post_init__(self) -> None:
        if self.linger < 0 or self.gather < 0 or self.max_chars < 1 or self.max_envelopes < 1:
            raise ChannelConfigError("Log batching linger and entry caps must be positive.")

    @classmethod
    def from_settings(cls, settings: Settings) -> LogBatching:
        return cls(linger=settings.log_linger)


class SegmentLog:
    """Appends one segment's envelopes to its log (a channel calls ``append`` for every
    envelope it builds), batched as LogBatching says: each XADD's field ``e`` holds the
    envelopes written together, joined by newlines, so every event keeps its own
    envelope and sequence.

    Thread-safe. Writes go through the process's GroupWriter for the client
    (channels.group_commit): one round trip carries every log of the process that has
    envelopes waiting, each log's entries in order. Appends take only the buffer's lock,
    so a burst gathers while a write is in flight. A failed write is raised by this or
    the next append and every later one (AbstractChannel then stops logging): what it
    held is lost, never written late."""

    def __init__(
        self,
        client: redis.Redis,
        segment_id: str,
        thread_id: str,
        limits: LogLimits,
        protocol: str = "native",
        *,
        batching: LogBatching | None = None,
        flusher: Flusher = FLUSHER,
    ) -> None:
        self.client = client
        self.segment_id = segment_id
        self.thread_id = thread_id
        self.pointer = ActiveSegment(protocol, segment_id).pointer
        self.limits = limits
        self.batching = batching or LogBatching()
        self.flusher = flusher
        self.key = log_key(segment_id)
        self.fence = fence_key(segment_id)
        #: the attempt of the run this writer holds (``take_over`` or the channel sets
        #: it once the run is admitted); 0 until then: refused by any fence
        self.epoch = 0
        self._started = False
        self._release = client.register_script(_RELEASE)
        self._lock = threading.Lock()  # the buffer, its terminal flag, the schedule
        self._buffer: list[str] = []
        self._terminal = False
        self._chars = 0
        self._last_write = -math.inf
        self._scheduled = False
        self._error: Exception | None = None
        # Envelopes per kept entry, oldest first: MAXLEN counts entries, the cap counts
        # envelopes, so the entries to keep are those the newest max_events need.
        self._kept: collections.deque[int] = collections.deque()
        self._kept_envelopes = 0

    def append(self, envelope: str, *, terminal: bool = False) -> None:
        batching = self.batching
        with self._lock:
            if self._error is not None:
                raise self._error
            self._buffer.append(envelope)
            self._chars += len(envelope)
            self._terminal = self._terminal or terminal
            now = time.monotonic()
            full = len(self._buffer) >= batching.max_envelopes or self._chars >= batching.max_chars
            if not (
                terminal
                or full
                or (not self._scheduled and now - self._last_write >= batching.linger)
            ):
                if not self._scheduled:
                    self._scheduled = True
                    self.flusher.at(now + batching.gather, self._write_due)
                return
        # The terminal and a full buffer wait for their write (its end is readable; a
        # buffer never outgrows its caps by much); an early envelope does not.
        self._commit(wait=terminal or full)

    def flush(self) -> None:
        """Write what waits now and return once it is written (after any write in
        flight): what a writer that must know its envelopes are readable calls, e.g.
        before it hands a cursor on."""
        self._commit(wait=True)

    def _commit(self, *, wait: bool) -> None:
        writer_for(self.client).commit(self, wait=wait)
        if self._error is not None:
            raise self._error

    def _write_due(self) -> None:
        """The flusher's turn: write what waits, if anything."""
        with self._lock:
            self._scheduled = False
        writer_for(self.client).commit(self, wait=False)

    # The GroupWriter's side (channels.group_commit.Pending) ----------------------------

    def queue(self, pipe: Pipeline) -> bool:
        """Everything buffered onto ``pipe``, as entries within the caps, with the
        pointers of a first entry and the release of a terminal one."""
        batching = self.batching
        with self._lock:
            if self._error is not None or not self._buffer:
                return False
            envelopes, self._buffer, self._chars = self._buffer, [], 0
            terminal, self._terminal = self._terminal, False
        entries: list[list[str]] = [[]]
        chars = 0
        for envelope in envelopes:
            last = entries[-1]
            if last and (len(last) >= batching.max_envelopes or chars >= batching.max_chars):
                entries.append(last := [])
                chars = 0
            last.append(envelope)
            chars += len(envelope)
        for index, entry in enumerate(entries):
            self._kept.append(len(entry))
            self._kept_envelopes += len(entry)
            while self._kept_envelopes - self._kept[0] >= self.limits.max_events:
                self._kept_envelopes -= self._kept.popleft()
            self._queue_entry(pipe, SEPARATOR.join(entry), terminal and index == len(entries) - 1)
        return True

    def written(self, error: Exception | None) -> None:
        with self._lock:
            if error is not None and self._error is None:
                if isinstance(error, redis.ResponseError) and "FENCED" in str(error):
                    self._error = self._fenced(str(error))
                else:
                    self._error = error
                    logger.warning("segment log write failed; logging stops: %s", error)
            self._last_write = time.monotonic()

    def _fenced(self, reply: str) -> FencedOutError:
        newer = reply.rsplit(" ", 1)[-1]
        return FencedOutError(
            f"Segment {self.segment_id}'s log refused attempt {self.epoch} of its run: "
            f"attempt {newer} took the run over.",
            fence_reason=f"log fenced at attempt {newer}; this writer holds {self.epoch}",
        )

    def take_over(self, epoch: int) -> str | None:
        """This writer took its run over at attempt ``epoch`` (a recovery): fence its own
        segment and the lost writer's (the thread's active segment, when another one) at
        ``epoch``, point the thread at this segment, and append the notice to the lost
        writer's log. One round trip; returns the lost writer's segment when noticed."""
        self.epoch = epoch
        keep = _seconds(self.limits.max_age)
        lost = active_segment(self.client, self.thread_id) or latest_segment(
            self.client, self.thread_id
        )
        pipe = self.client.pipeline(transaction=False)
        pipe.eval(_TAKE_OVER, 2, self.key, self.fence, epoch, "", "", keep, REPLACED)
        noticed = lost is not None and lost.segment_id != self.segment_id
        if lost is not None and noticed:
            # The pointers first: a reader that hears the notice finds this segment newest.
            pipe.set(active_key(self.thread_id), self.pointer, ex=keep)
            pipe.set(latest_key(self.thread_id), self.pointer, ex=keep)
            pipe.sadd(segments_key(self.thread_id), self.segment_id)
            pipe.eval(
                _TAKE_OVER,
                2,
                log_key(lost.segment_id),
                fence_key(lost.segment_id),
                epoch,
                lost.segment_id,
                self.segment_id,
                keep,
                REPLACED,
            )
        pipe.execute()
        return lost.segment_id if lost is not None and noticed else None

    def _queue_entry(self, pipe: Pipeline, entry: str, terminal: bool) -> None:
        if not self._started:
            # The thread's active segment from its first entry on (the web announced it
            # already, unless nobody did: a timer, a recovery).
            pipe.set(active_key(self.thread_id), self.pointer, ex=_seconds(self.limits.max_age))
            pipe.set(latest_key(self.thread_id), self.pointer, ex=_seconds(self.limits.max_age))
            pipe.sadd(segments_key(self.thread_id), self.segment_id)
            pipe.expire(
                segments_key(self.thread_id),
                _seconds(self.limits.max_age + self.limits.retention),
            )
        if terminal:
            # Released before the terminal is readable: a relayed client that got the
            # terminal and asks again at once finds the thread idle.
            self._release(
                keys=[active_key(self.thread_id), latest_key(self.thread_id)],
                args=[self.pointer, _seconds(self.limits.retention)],
                client=pipe,
            )
        # Exact trimming: entries are batches, so few, and "~" trims only whole nodes of
        # 100 entries, which could keep many times the cap's envelopes. XADD never sets or
        # refreshes a TTL: the cap is set at the start, the retention at the terminal.
        if terminal:
            expire = _seconds(self.limits.retention)
        else:
            expire = 0 if self._started else _seconds(self.limits.max_age)
        # EVAL with the body, not a registered Script: redis-py checks a Script's SHA
        # (SCRIPT EXISTS) before every pipeline that carries one, a round trip per write.
        pipe.eval(_APPEND, 2, self.key, self.fence, self.epoch, entry, len(self._kept), expire)
        self._started = True


def _seconds(value: float) -> int:
    return max(1, round(value))


#: Entries: (Redis id, fields) as redis-py returns them.
_Rows = list[tuple[bytes, dict[bytes, bytes]]]


class LogReader:
    """Reads one segment's log from after ``after`` (a sequence; -1 for the start):
    first what is kept, then live, to its terminal. One blocked XREAD per reader (each
    holds a Redis connection while it waits)."""

    def __init__(
        self, client: redis.Redis, segment_id: str, *, after: int = -1, thread_id: str | None = None
    ) -> None:
        self.client = client
        self.segment_id = segment_id
        self.key = log_key(segment_id)
        self.after = after
        #: when given, a wait also checks that the thread has no newer segment
        self.thread_id = thread_id

    def check(self) -> None:
        """Refuse a cursor the log cannot continue from (LogGoneError): the log is gone
        or was trimmed past it. A log not begun yet is fine (its job is queued)."""
        first = _edge(cast(_Rows, self.client.xrange(self.key, count=1)), 0)
        check_cursor(self.segment_id, first, self.after)

    def finished_at_cursor(self) -> bool:
        """Whether the segment ended and the cursor already holds its last event."""
        last = _edge(cast(_Rows, self.client.xrevrange(self.key, count=1)), -1)
        return last is not None and last.is_terminal and last.sequence <= self.after + 1

    def envelopes(self, *, wait: float, timeout: float) -> Iterator[Envelope | None]:
        """The envelopes after the cursor, in order, the terminal last; None after each
        ``wait`` seconds without one (a heartbeat). Raises ChannelReadError after
        ``timeout`` seconds of silence."""
        last = b"0-0"
        heard = time.monotonic()
        block = max(1, int(wait * 1000))
        while True:
            reply = cast(
                list[tuple[bytes, _Rows]],
                self.client.xread({self.key: last}, count=500, block=block),
            )
            if not reply:
                if time.monotonic() - heard >= timeout:
                    raise ChannelReadError(
                        f"Segment {self.segment_id} was silent for {timeout:g} seconds."
                    )
                self._check_not_replaced()
                yield None
                continue
            heard = time.monotonic()
            for entry_id, fields in reply[0][1]:
                last = entry_id
                for text in split_entry(fields[_FIELD]):
                    envelope = Envelope.parse(text)
                    if envelope.sequence <= self.after:
                        continue
                    if envelope.type == REPLACED:
                        raise replaced_error(self.segment_id, envelope.data)
                    self.after = envelope.sequence
                    yield envelope
                    if envelope.is_terminal:
                        return

    def _check_not_replaced(self) -> None:
        if self.thread_id is not None:
            check_not_replaced(self.client, self.thread_id, self.segment_id)


def check_cursor(segment_id: str, first: Envelope | None, after: int) -> None:
    """Refuse (LogGoneError) a cursor ``after`` that a log whose first kept envelope is
    ``first`` cannot continue from: the log is gone (for a cursor at 0 or above) or was
    trimmed past it. A log not begun yet is fine for -1 (its job is queued)."""
    if first is None:
        if after >= 0:
            raise LogGoneError(f"Segment {segment_id} is no longer kept.")
        return
    if first.sequence > after + 1:
        raise LogGoneError(
            f"Segment {segment_id} keeps events from {first.sequence} on; "
            f"the cursor {after} is older."
        )


def replaced_error(segment_id: str, notice: object) -> SegmentReplacedError:
    """What a reader raises at a ``stream.replaced`` notice (its data ``notice``)."""
    newer = notice.get("newer") if isinstance(notice, dict) else None
    return SegmentReplacedError(
        f"Segment {segment_id} ended without its terminal: its run was taken over and "
        f"goes on in segment {newer}.",
        newer=newer if isinstance(newer, str) else None,
    )


def check_not_replaced(client: redis.Redis, thread_id: str, segment_id: str) -> None:
    """A segment whose worker was lost never gets its terminal; the run's recovery goes
    on in a new segment. A reader left waiting on the old one says so
    (SegmentReplacedError) once the thread's newest segment is another one."""
    newest = latest_segment(client, thread_id)
    if newest is not None and newest.segment_id != segment_id:
        raise SegmentReplacedError(
            f"Segment {segment_id} ended without its terminal: segment "
            f"{newest.segment_id} replaced it (the run went on elsewhere).",
            newer=newest.segment_id,
        )


def _edge(rows: _Rows, index: int) -> Envelope | None:
    """The first (``index`` 0) or last (-1) envelope of a one-entry range reply."""
    return Envelope.parse(split_entry(rows[0][1][_FIELD])[index]) if rows else None


# Reading what is kept after a cursor (a push consumer filling a gap, web.segments) ------

#: Redis entries read per XRANGE while looking for a cursor
_PAGE: Final = 500


@dataclasses.dataclass(frozen=True)
class Kept:
    """What a segment's log holds after a cursor: envelope texts in sequence order (at
    most the limit asked for), and whether they reach the segment's terminal (nothing
    will follow them)."""

    envelopes: list[str]
    ended: bool


def _split(rows: _Rows) -> Iterator[str]:
    """Each entry's envelopes (one entry may hold several: split_entry)."""
    for _, fields in rows:
        yield from split_entry(fields[_FIELD])


def kept_after(client: redis.Redis, segment_id: str, after: int, limit: int) -> Kept:
    """The envelopes the log keeps with a sequence above ``after`` (-1: from the start),
    at most ``limit`` of them. Raises LogGoneError when the log cannot continue from
    ``after``: it is gone (for a cursor at 0 or above) or was trimmed past it. An
    absent log with ``after`` of -1 is an empty answer: it may not have begun yet."""
    found: list[str] = []
    first: Envelope | None = None
    start = "-"
    while len(found) < limit:
        rows = cast(_Rows, client.xrange(log_key(segment_id), min=start, count=_PAGE))
        for text in _split(rows):
            envelope = Envelope.parse(text)
            first = first or envelope
            if envelope.sequence > after and len(found) < limit:
                found.append(text)
        if len(rows) < _PAGE:
            break
        start = "(" + rows[-1][0].decode()  # exclusive: after the last entry read
    check_cursor(segment_id, first, after)
    end = _edge(cast(_Rows, client.xrevrange(log_key(segment_id), count=1)), -1)
    reached = not found or Envelope.parse(found[-1]).sequence == (end.sequence if end else -1)
    return Kept(found, end is not None and end.is_terminal and reached)


def is_thread_segment(client: redis.Redis, thread_id: str, segment_id: str) -> bool:
    """Whether ``segment_id`` is one of the thread's segments that may still be kept."""
    return bool(client.sismember(segments_key(thread_id), segment_id))
