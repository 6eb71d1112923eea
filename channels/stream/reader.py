"""LogMultiplexer: one reader of every segment log a web app relays, instead of one
blocked XREAD (and one Redis connection) per SSE response.

- **One command:** a daemon thread runs ``XREAD COUNT n BLOCK ms STREAMS k1..kN
  id1..idN`` over every subscribed log on a connection of its own, from a read list of
  RESP bytes kept between reads. Only ``threading``, ``collections`` and redis-py:
  plain threads under the tests' threaded server, greenlets under gunicorn's gevent
  worker.
- **Wake-up:** a new subscription (or a drained one) adds an entry to the
  multiplexer's own wake stream, which every XREAD reads too. Unlike ``CLIENT
  UNBLOCK``, which does nothing when it arrives before the XREAD blocks, an entry
  added at any time after the reader's last read of that stream ends its next XREAD.
- **Rate:** at most one XREAD per ``PER_KEY_INTERVAL`` seconds per key (capped at
  ``MAX_INTERVAL``), so thousands of slow logs are read in batches, not in a spin; one
  key adds no delay.
- **Backpressure:** each subscription's queue holds at most about ``QUEUE_LIMIT``
  envelopes; past that its log is left out of the XREAD until it drains (the log is
  durable: a slow client delays, never loses). Readers of the same log share its read.
  A subscription given a byte ``budget`` is also dropped once what waits unsent for
  its client (queued, plus what its response took and has not written yet) passes the
  budget while the client took nothing for ``STALL_SECONDS`` (a client that reads is
  never dropped for one large read landing at once): its queue ends with
  ``ClientTooSlowError`` and ``on_overflow`` is called (the web shuts the client's
  socket down, so a response blocked writing to a client that never reads ends at once
  and frees what it held). The client resumes from the last event it received.
- **Heartbeats:** a waiting response asks to be woken by a time (its heartbeat or its
  silence timeout) instead of waiting with a timeout of its own, which under gevent
  costs a timer and an exception object per event relayed; the reader wakes those
  whose time has come every ``tick`` seconds (its XREAD blocks no longer than that).
- **Direct writes:** a response may hand the reader a ``Sink`` (web.direct) once its
  headers are out: the reader then writes each read's frames itself instead of
  queueing them and waking the response, until the sink declines (a write the client's
  socket took only in part, a gone client) or the read holds the terminal; then the
  response takes over again.
- **Failure:** a Redis error goes to every subscription (which ends its response with
  the protocol's failure frames) and the reader retries with backoff.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Sequence
from typing import Final, Protocol, cast

import redis

from relayline.channels.envelope import REPLACED
from relayline.channels.errors import ChannelReadError, ClientTooSlowError
from relayline.channels.keys import log_key, reader_wake_key
from relayline.channels.stream.log import check_not_replaced, replaced_error, split_entry
from relayline.channels.stream.splice import Spliced, splice

logger = logging.getLogger("relayline.channel")

#: entries per log per XREAD
ENTRY_COUNT: Final = 100
#: milliseconds one XREAD blocks when nothing arrives (at most: see TICK)
BLOCK_MS: Final = 2000
#: seconds between two looks for waiting responses whose time has come: a heartbeat
#: or a silence timeout is late by up to this much
TICK: Final = 0.25
#: seconds between two XREADs per key read, and at most
PER_KEY_INTERVAL: Final = 10e-6
MAX_INTERVAL: Final = 0.01
#: envelopes a subscription may hold unread before its log is left out of the read
QUEUE_LIMIT: Final = 2000
#: characters of envelopes a response takes from its queue at once (at least one
#: envelope): what it splices, joins and encodes in one go, so a client that stops
#: reading holds about this much in copies, whatever the size of the segment (the
#: texts still queued are shared by every reader of the log)
TAKE_CHARS: Final = 1 << 20
#: seconds a client over its byte budget may go without taking anything before it is
#: dropped (checked at each read delivered to it and at each tick)
STALL_SECONDS: Final = 1.0
#: seconds between reconnection attempts after a Redis error, first and at most
BACKOFF_FIRST: Final = 0.05
BACKOFF_MAX: Final = 2.0
_START: Final = b"0-0"


def _bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


_XREAD_HEAD: Final = (
    _bulk(b"XREAD") + _bulk(b"COUNT") + _bulk(b"%d" % ENTRY_COUNT) + _bulk(b"BLOCK")
)
_STREAMS: Final = _bulk(b"STREAMS")


class _Wire(Protocol):
    """The part of a redis-py Connection the reader uses (redis-py leaves it untyped)."""

    def connect(self) -> None: ...
    def disconnect(self) -> None: ...
    def send_command(self, *args: str | bytes, check_health: bool = True) -> None: ...
    def send_packed_command(self, command: list[bytes], check_health: bool = True) -> None: ...
    def read_response(self) -> object: ...


#: what a subscription's queue carries: the envelope texts of one read, or the error
#: that ended the subscription
_Item = list[str] | ChannelReadError


class Sink(Protocol):
    """Where the reader writes a subscription's events itself (web.direct.DirectSink)."""

    def write(self, batch: Sequence[Spliced]) -> bool:
        """(the reader) Write the events (never a terminal); False when not all of it
        went out, or the client is gone: the response takes over."""

    def flush(self) -> None:
        """(the response) Send what ``write`` left; raise when the client is gone."""


class Subscription:
    """One reader of one segment's log, from after ``after`` (a sequence; -1 for the
    start) to its terminal. Close it (or use it as a context manager) when done."""

    def __init__(
        self,
        mux: LogMultiplexer,
        segment_id: str,
        after: int,
        thread_id: str | None,
        *,
        budget: int | None = None,
        on_overflow: Callable[[], None] | None = None,
    ) -> None:
        self.mux = mux
        self.segment_id = segment_id
        self.key = log_key(segment_id)
        #: the sequence of the last envelope taken (the client's cursor)
        self.after = after
        #: when given, silence also checks that the thread has no newer segment
        self.thread_id = thread_id
        self.closed = False
        # A deque and an Event rather than a queue.Queue: under gevent a Queue.get with
        # a timeout costs a lock, a condition and a timer per event relayed.
        self._items: collections.deque[_Item] = collections.deque()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._delivered = 0  # envelopes queued (written by the reader only)
        self._taken = 0  # envelopes taken (written by the response only)
        self._stalled = False  # the reader left this log out: wake it once drained
        #: while the response waits: the monotonic time by which to wake it regardless
        self._due = math.inf
        #: while set, the reader writes what it reads here instead of queueing it
        self._sink: Sink | None = None
        #: the monotonic time the response last had, or the reader wrote, an event
        self._heard = time.monotonic()
        #: characters that may wait unsent for the client before it is dropped
        self.budget = budget
        self._on_overflow = on_overflow
        #: characters of the response's take: at most half the budget, so that one
        #: write in progress never counts as over it by itself
        self._take_chars = TAKE_CHARS if budget is None else max(1, min(TAKE_CHARS, budget // 2))
        self._chars_in = 0  # characters queued (written by the reader only)
        self._chars_out = 0  # characters taken (written by the response only)
        self._sending = 0  # characters taken and not yet written (the response only)
        #: the monotonic time the client last took something (its response took a read
        #: or finished a write, or the reader's own write went out whole)
        self._progress = time.monotonic()
        #: why the client was dropped for passing its budget (set by the reader)
        self._overflow: ClientTooSlowError | None = None

    # the reader's side -------------------------------------------------------------

    @property
    def _pending(self) -> int:
        """Envelopes queued, not taken yet."""
        return self._delivered - self._taken

    @property
    def dropped(self) -> bool:
        """Whether the client was dropped for passing its budget."""
        return self._overflow is not None

    def _deliver(self, item: _Item) -> None:
        if self.dropped:
            return  # nothing more for a client that was dropped
        sink = self._sink
        if sink is not None and isinstance(item, list) and not self._items:
            # At most about TAKE_CHARS written at once; the rest goes to the response,
            # which takes it in parts (so no read is copied whole for one client).
            fits = max(1, _within(item, self._take_chars))
            rest = item[fits:]
            item = self._write(sink, item[:fits]) + rest
            if self._sink is not None and not item:
                return  # all written
        if isinstance(item, list):
            self._delivered += len(item)
            self._chars_in += sum(map(len, item))
        self._items.append(item)  # possibly empty: what wakes the response to take over
        self._ready.set()
        self._check_budget(time.monotonic())

    def _check_budget(self, now: float) -> None:
        """(the reader) Drop the client when it is over its budget and stalled."""
        if (
            self.budget is not None
            and self._overflow is None
            and self.unsent > self.budget
            and now - self._progress >= STALL_SECONDS
        ):
            self._drop()

    @property
    def unsent(self) -> int:
        """Characters waiting for the client: queued, or taken and not yet written."""
        return self._chars_in - self._chars_out + self._sending

    def _drop(self) -> None:
        """(the reader) The client passed its budget: end its queue with the reason and
        let the web cut its connection (a response blocked writing to it ends)."""
        self._sink = None
        self._overflow = ClientTooSlowError(
            f"The client of segment {self.segment_id} left {self.unsent} characters "
            f"unread, more than its budget of {self.budget}; it was dropped after event "
            f"{self.after} and may resume from there."
        )
        self._items.append(self._overflow)  # wakes a response waiting for a read
        self._ready.set()
        if self._on_overflow is not None:
            try:
                self._on_overflow()
            except Exception:  # the reader serves every other client: never raise here
                logger.exception("dropping the slow client of %s failed", self.segment_id)

    def sending(self, chars: int) -> None:
        """(the response) ``chars`` of what it took are being written to the client
        (0 once written): counted against the budget until then."""
        self._sending = chars
        if not chars:
            self._progress = time.monotonic()

    def _write(self, sink: Sink, texts: list[str]) -> list[str]:
        """Write the read's events to ``sink``; what is left for the response to take:
        nothing, or the whole read when it holds the terminal (the end is the
        response's) or a text that cannot be spliced (the response meets the error in
        order). Clears the sink when the response must take over."""
        try:
            batch = self._fresh(texts)
        except ChannelReadError:
            self._sink = None
            return texts
        if not batch:
            return []
        if batch[-1].type in _ENDS:
            self._sink = None
            return texts
        self.after = batch[-1].sequence
        self._heard = time.monotonic()
        if sink.write(batch):
            self._progress = self._heard
        else:
            self._sink = None
        return []

    def _fresh(self, texts: list[str]) -> list[Spliced]:
        """The events of ``texts`` after the cursor, in order, up to and including a
        terminal (the cursor itself is left where it is)."""
        batch: list[Spliced] = []
        after = self.after
        for text in texts:
            spliced = splice(text)
            if spliced.sequence <= after:
                continue
            after = spliced.sequence
            batch.append(spliced)
            if spliced.type in _ENDS:
                break
        return batch

    def _full(self) -> bool:
        """Whether the queue is full; if so, the next drain wakes the reader."""
        if self.dropped:
            return True  # never read for again
        if self._pending < self.mux.queue_limit:  # the common case
            return False
        # Stalled first, the count read after; _take writes its count first and reads
        # the flag after: one of the two sees the other's write, so a drain never
        # misses the stall (a wake too many is harmless). No lock per event taken.
        self._stalled = True
        if self._pending < self.mux.queue_limit:
            self._stalled = False
            return False
        return True

    # the response's side -----------------------------------------------------------

    def batches(
        self, *, wait: float, timeout: float, sink: Sink | None = None
    ) -> Generator[list[Spliced] | None, None, None]:
        """The envelopes after the cursor, in order, as batches of whatever arrived
        together, the terminal last; None after each ``wait`` seconds without one (a
        heartbeat). Raises ChannelReadError after ``timeout`` seconds of silence, on a
        Redis error, or when the thread's newest segment is another one.

        With a ``sink``, once something was yielded (the response's headers are out)
        the reader writes the events to it whenever nothing waits here, and they are not
        yielded; whatever the sink raises from ``flush`` ends the iteration."""
        self._heard = beat = time.monotonic()
        handed = False  # something was yielded: the response's headers are out
        try:
            while True:
                if sink is not None and handed and not self._items:
                    self._sink = sink
                due = min(max(beat, self._heard) + wait, self._heard + timeout)
                texts = self._take(due)
                if sink is not None:
                    self._sink = None  # the socket is the response's again
                    sink.flush()
                    self._progress = time.monotonic()
                if texts is None:
                    now = time.monotonic()
                    if now - self._heard >= timeout:
                        raise ChannelReadError(
                            f"Segment {self.segment_id} was silent for {timeout:g} seconds."
                        )
                    if now < max(beat, self._heard) + wait:
                        continue  # the reader wrote events meanwhile: no heartbeat due
                    beat = now
                    self._check_not_replaced()
                    handed = True
                    yield None
                    continue
                if texts:
                    self._heard = beat = time.monotonic()
                batch = self._fresh(texts)
                notice = batch.pop() if batch and batch[-1].type == REPLACED else None
                if batch:
                    self.after = batch[-1].sequence
                    handed = True
                    yield batch
                    if batch[-1].type in _TERMINALS:
                        return
                if notice is not None:
                    # The run was taken over: what came before it, then the news, at once.
                    raise replaced_error(self.segment_id, _notice_data(notice))
        finally:
            self._sink = None  # never written by the reader once the response is gone

    def _take(self, due: float) -> list[str] | None:
        """The texts of every queued read (about ``queue_limit`` at most), waiting
        for the first until the monotonic time ``due`` (the reader's tick wakes the
        wait); None when none came by then."""
        items = self._items
        if not items:
            self._due = due
            while True:
                self._ready.clear()
                # Looked at after the clear: a read delivered before it set the
                # Event just cleared, and is in the deque now.
                if items:
                    break
                if time.monotonic() >= due:
                    self._due = math.inf
                    return None
                self._ready.wait()  # a read, an error, or the reader's tick
                if items:
                    break
            self._due = math.inf
        if self._overflow is not None:  # what is queued will never be sent
            items.clear()
            raise self._overflow
        texts: list[str] = []
        chars = 0
        limit = self._take_chars
        while items and len(texts) < self.mux.queue_limit and chars < limit:
            item = items.popleft()
            if isinstance(item, ChannelReadError):
                if texts:  # what came before the error first
                    items.appendleft(item)
                    break
                raise item
            taken = _within(item, limit - chars) if texts else max(1, _within(item, limit))
            if taken < len(item):
                items.appendleft(item[taken:])  # the rest on the next take
            texts += item[:taken]
            chars += sum(map(len, item[:taken]))
            if taken < len(item):
                break
        self._taken += len(texts)
        self._chars_out += chars
        self._progress = time.monotonic()
        if self._stalled:  # rare: the reader left this log out
            with self._lock:
                wake = self._stalled and self._pending <= self.mux.queue_limit // 2
                if wake:
                    self._stalled = False
            if wake:
                self.mux.wake()
        return texts

    def _check_not_replaced(self) -> None:
        """A segment whose worker was lost never gets its terminal; the run's recovery
        goes on in a new segment. A reader left waiting on the old one says so, once
        the old one began (before that, the newest is the thread's previous segment)."""
        if self.thread_id is not None and self.after >= 0:
            check_not_replaced(self.mux.client, self.thread_id, self.segment_id)

    def close(self) -> None:
        self._sink = None
        if not self.closed:
            self.closed = True
            self.mux._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _within(texts: list[str], chars: int) -> int:
    """How many of ``texts``, from the first, fit in ``chars`` characters."""
    count = 0
    for text in texts:
        chars -= len(text)
        if chars < 0:
            break
        count += 1
    return count


_TERMINALS: Final = frozenset({"stream.completed", "stream.interrupted", "stream.failed"})
#: what ends a read of a segment: its terminal, or the notice that its run went on elsewhere
_ENDS: Final = _TERMINALS | {REPLACED}


def _notice_data(notice: Spliced) -> object:
    """The data of a ``stream.replaced`` notice, from its frame (``data: {...}``)."""
    try:
        return json.loads(notice.frame.removeprefix("data: "))
    except ValueError:
        return None


@dataclasses.dataclass(eq=False)
class _Log:
    """One log the reader reads, for every subscription to it."""

    name: str
    key: bytes  # RESP-encoded, cached
    subscribers: list[Subscription]
    last_id: bytes = _START
    encoded_id: bytes = _bulk(_START)
    #: its place among the ids of the read list (-1: left out of it)
    slot: int = -1

    def advance(self, entry_id: bytes) -> None:
        self.last_id = entry_id
        self.encoded_id = _bulk(entry_id)


class _ReadList:
    """What one XREAD names, kept between reads: rebuilt only when a log joins, leaves,
    fills up or drains, so a read costs in Python what its reply holds, not one step
    per log (the keys and ids are joined in C)."""

    def __init__(self, logs: list[_Log], wake_key: bytes) -> None:
        self.logs = logs
        self.ids = [log.encoded_id for log in logs]
        for slot, log in enumerate(logs):
            log.slot = slot
        self.keys = b"".join([*(log.key for log in logs), _bulk(wake_key)])
        self.head = b"*%d\r\n" % (4 + 2 + 2 * (len(logs) + 1)) + _XREAD_HEAD

    def advance(self, log: _Log, entry_id: bytes) -> None:
        log.advance(entry_id)
        if 0 <= log.slot < len(self.logs) and self.logs[log.slot] is log:
            self.ids[log.slot] = log.encoded_id

    def command(self, block: bytes, wake_id: bytes) -> bytes:
        return b"".join([self.head, block, _STREAMS, self.keys, *self.ids, _bulk(wake_id)])


class LogMultiplexer:
    """The shared reader of one web app's segment logs (``relayline.web.services.Services``
    holds one, started by the first ``subscribe``, stopped by ``close``)."""

    def __init__(
        self, client: redis.Redis, *, queue_limit: int = QUEUE_LIMIT, tick: float = TICK
    ) -> None:
        self.client = client
        #: envelopes a subscription may hold unread before its log is left out
        self.queue_limit = queue_limit
        #: seconds between two looks for waiting responses whose time has come
        self.tick = tick
        self._block = _bulk(b"%d" % max(1, min(BLOCK_MS, round(tick * 1000))))
        self._reset()

    def _reset(self) -> None:
        token = uuid.uuid4().hex
        self.wake_key = reader_wake_key(token)
        #: CLIENT SETNAME of the reader's connection (operators see who blocks)
        self.connection_name = f"relayline-mux-{token[:12]}"
        self._lock = threading.Lock()
        self._logs: dict[str, _Log] = {}
        #: the same logs by their key as a reply names it
        self._by_reply_key: dict[bytes, _Log] = {}
        self._joining: list[Subscription] = []
        self._reading: _ReadList | None = None  # None: to build again before the read
        self._wake_pending = False
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._connection: _Wire | None = None
        self._wake_id = _START

    def subscribe(
        self,
        segment_id: str,
        *,
        after: int = -1,
        thread_id: str | None = None,
        budget: int | None = None,
        on_overflow: Callable[[], None] | None = None,
    ) -> Subscription:
        """Read the log of ``segment_id`` after the sequence ``after`` (its start: -1);
        ``budget``: characters that may wait unsent for its client, past which it is
        dropped (``on_overflow`` is called; its queue ends with ClientTooSlowError)."""
        if self._pid != os.getpid():  # a forked child: the thread stayed in the parent
            self._reset()
        if self._closed.is_set():
            raise ChannelReadError("The web app's log reader is closed.")
        subscription = Subscription(
            self, segment_id, after, thread_id, budget=budget, on_overflow=on_overflow
        )
        with self._lock:
            self._joining.append(subscription)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="relayline-log-multiplexer", daemon=True
                )
                self._thread.start()
        self.wake()
        return subscription

    def wake(self) -> None:
        """End the reader's current XREAD, so that it reads what changed."""
        with self._lock:
            self._reading = None  # something joined or drained: look at every log again
            if self._wake_pending:
                return  # a wake is on its way, after the reader's last look
            self._wake_pending = True
        try:
            self.client.xadd(self.wake_key, {"w": "1"}, maxlen=1)
        except BaseException:
            with self._lock:
                self._wake_pending = False
            raise

    def close(self) -> None:
        """Stop the reader; every open subscription ends with a ChannelReadError."""
        if self._closed.is_set():
            return
        self._closed.set()
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            with contextlib.suppress(redis.RedisError):
                self.client.xadd(self.wake_key, {"w": "1"}, maxlen=1)
            thread.join(timeout=2)
        with contextlib.suppress(redis.RedisError):
            self.client.delete(self.wake_key)
        self._fail_all(ChannelReadError("The web app's log reader closed."))
        self._disconnect()

    def _remove(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._joining:
                self._joining.remove(subscription)
                return
            log = self._logs.get(subscription.key)
            if log is not None and subscription in log.subscribers:
                log.subscribers.remove(subscription)
                if not log.subscribers:
                    del self._logs[subscription.key]
                    del self._by_reply_key[subscription.key.encode()]
                    self._reading = None

    # the reader thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            # Whatever ended the thread, no response may wait for a reader that is gone.
            if not self._closed.is_set():
                self._fail_all(ChannelReadError("The web app's log reader stopped."))

    def _loop(self) -> None:
        backoff = BACKOFF_FIRST
        began = 0.0
        next_tick = 0.0
        while not self._closed.is_set():
            now = time.monotonic()
            if now >= next_tick:
                self._wake_due(now)
                next_tick = now + self.tick
            try:
                reading = self._snapshot()
                # Adaptive pacing: with many logs, a short wait lets entries gather.
                interval = min(MAX_INTERVAL, PER_KEY_INTERVAL * len(reading.logs))
                pause = began + interval - time.monotonic()
                if pause > 0 and self._closed.wait(pause):
                    break
                began = time.monotonic()
                self._read(reading)
                backoff = BACKOFF_FIRST
            except (redis.RedisError, OSError) as exc:
                if self._closed.is_set():
                    break
                logger.warning("log multiplexer: Redis failed, retrying: %s", exc)
                self._fail_all(ChannelReadError(f"Reading the segment logs failed: {exc}"))
                self._disconnect()
                if self._closed.wait(backoff):
                    break
                backoff = min(backoff * 2, BACKOFF_MAX)
            except Exception as exc:  # a bug here must not strand every response
                logger.exception("log multiplexer failed")
                self._fail_all(ChannelReadError(f"Reading the segment logs failed: {exc}"))
                self._disconnect()  # a reply may be left half read
                if self._closed.wait(backoff):
                    break

    def _wake_due(self, now: float) -> None:
        """Wake every waiting response whose heartbeat or silence timeout is due; drop
        the clients stalled over their budget."""
        with self._lock:
            waiting = [s for log in self._logs.values() for s in log.subscribers]
            waiting += self._joining
        for subscription in waiting:
            if subscription._due <= now:
                subscription._ready.set()
            subscription._check_budget(now)  # a stalled client no read reaches

    def _snapshot(self) -> _ReadList:
        """The logs to read now: joins attached (a log read already first replays its
        start to the newcomer), full queues left out; the last read's list when
        nothing changed."""
        with self._lock:
            self._wake_pending = False
            joining, self._joining = self._joining, []
            if not joining and self._reading is not None:
                return self._reading
            for subscription in joining:
                log = self._logs.get(subscription.key)
                if log is None:
                    key = subscription.key
                    self._logs[key] = log = _Log(key, _bulk(key.encode()), [])
                    self._by_reply_key[key.encode()] = log
            logs = dict(self._logs)
        for subscription in joining:
            log = logs[subscription.key]
            if log.last_id != _START:
                self._replay(subscription, log.last_id)
            with self._lock:
                if subscription.closed or self._logs.get(subscription.key) is not log:
                    continue
                log.subscribers.append(subscription)
        with self._lock:
            for log in self._logs.values():
                log.slot = -1
            self._reading = _ReadList(
                [
                    log
                    for log in self._logs.values()
                    if log.subscribers and not any(s._full() for s in log.subscribers)
                ],
                self.wake_key.encode(),
            )
            return self._reading

    def _replay(self, subscription: Subscription, upto: bytes) -> None:
        """What a log already read holds up to ``upto``, for a subscription that joins
        it (another reader of the same segment was there first)."""
        reply = self._command(b"XRANGE", subscription.key.encode(), b"-", upto)
        texts = [t for _, fields in cast(list[list[object]], reply or []) for t in _texts(fields)]
        if texts:
            subscription._deliver(texts)

    def _read(self, reading: _ReadList) -> None:
        connection = self._connect()
        command = reading.command(self._block, self._wake_id)
        connection.send_packed_command([command], check_health=False)
        reply = connection.read_response()
        if not reply:
            return  # BLOCK ran out
        wake = self.wake_key.encode()
        by_key = self._by_reply_key
        for key, rows in cast(list[tuple[bytes, list[list[object]]]], reply):
            if key == wake:
                self._wake_id = cast(bytes, rows[-1][0])
                continue
            log = by_key.get(key)
            if log is None or not rows:
                continue
            texts = [text for _, fields in rows for text in _texts(fields)]
            with self._lock:
                if self._logs.get(log.name) is not log:
                    continue  # every reader left meanwhile (a newer log may hold the key)
                reading.advance(log, cast(bytes, rows[-1][0]))
                subscribers = list(log.subscribers)
            full = False
            for subscription in subscribers:
                subscription._deliver(texts)
                full = subscription._full() or full
            if full:
                with self._lock:
                    self._reading = None  # leave this log out until its reader drains

    def _command(self, *args: bytes) -> object:
        connection = self._connect()
        connection.send_command(*args, check_health=False)
        return connection.read_response()

    def _connect(self) -> _Wire:
        connection = self._connection
        if connection is None:
            pool = self.client.connection_pool
            kwargs = dict(pool.connection_kwargs)
            # Longer than a BLOCK: a blocked XREAD is no dead connection.
            kwargs["socket_timeout"] = BLOCK_MS / 1000 + 10
            kwargs["client_name"] = self.connection_name
            connection = cast(_Wire, pool.connection_class(**kwargs))
            connection.connect()
            # The wake stream outlives a process killed before close() by a day at most.
            connection.send_command("XADD", self.wake_key, "MAXLEN", "1", "*", "w", "1")
            connection.read_response()
            connection.send_command("EXPIRE", self.wake_key, "86400")
            connection.read_response()
            self._connection = connection
        return connection

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.disconnect()

    def _fail_all(self, error: ChannelReadError) -> None:
        """Tell every subscription the read failed; they end, new ones start over."""
        with self._lock:
            subscriptions = [s for log in self._logs.values() for s in log.subscribers]
            subscriptions += self._joining
            self._logs.clear()
            self._by_reply_key.clear()
            self._joining = []
            self._reading = None
        for subscription in subscriptions:
            subscription._deliver(error)


def _texts(fields: object) -> list[str]:
    """The envelope texts of one entry's fields (``[b"e", value]`` as read raw)."""
    return split_entry(cast(list[bytes], fields)[1])
