"""Group commit across segment logs: one pipeline per round trip for every log of the
process that has envelopes waiting, instead of one round trip per log.

A worker running hundreds of turns at once appends to hundreds of logs, each a few
times a second. Writing each log on its own costs one Redis round trip per append, and
every round trip a turn thread blocks in is a GIL hand-off in a process whose threads
already queue for the GIL. Here the caller that finds the writer idle writes at once
(a lone append waits for nothing), taking every log that has something waiting; an
append that comes while a write is in flight returns at once, and the next round takes
it: after the round in flight, by a caller that must wait for its own envelopes (a
terminal, a full buffer, a flush) or else by the process's flusher thread.

One writer per Redis client per process (``writer_for``); rounds of one writer are
strictly one at a time, so each log's entries reach Redis in the order appended.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Protocol

import redis
from redis.client import Pipeline

from relayline.channels.stream.flusher import FLUSHER, Flusher


class Pending(Protocol):
    """What a writer writes: a log with envelopes waiting (SegmentLog)."""

    def queue(self, pipe: Pipeline) -> bool:
        """Move what waits onto ``pipe``'s commands; whether there was anything."""
        ...

    def written(self, error: Exception | None) -> None:
        """The round that carried what ``queue`` took ended (``error``: it failed)."""
        ...


class GroupWriter:
    """Writes the waiting envelopes of many logs on one Redis client, one round (one
    pipeline, one round trip) at a time. Thread-safe."""

    def __init__(self, client: redis.Redis, flusher: Flusher = FLUSHER) -> None:
        self.client = client
        self.flusher = flusher
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._dirty: dict[Pending, None] = {}  # insertion-ordered set
        self._leading = False
        self._started = 0  # rounds begun
        self._completed = 0  # rounds ended
        self._waiters = 0  # callers waiting for a round to carry their envelopes
        self._handed = False  # the flusher has a round to lead

    def commit(self, item: Pending, *, wait: bool) -> None:
        """Have ``item``'s waiting envelopes written: at once, in the caller, when no
        round is in flight; else by the next round, which the caller waits for and
        leads (``wait``) or leaves to whoever comes next (not ``wait``)."""
        with self._lock:
            self._dirty[item] = None
            needed = self._started + 1  # the next round to begin takes ``item``
            while self._completed < needed:
                if not self._leading:
                    self._leading = True
                    break
                if not wait:
                    return
                self._waiters += 1
                try:
                    self._done.wait()
                finally:
                    self._waiters -= 1
            else:
                return
        self._lead()

    def _background(self) -> None:
        """The flusher's turn: a round for what callers left to the next round."""
        with self._lock:
            self._handed = False
            if self._leading or not self._dirty:
                return
            self._leading = True
        self._lead()

    def _lead(self) -> None:
        """One round, by the caller that set ``_leading``."""
        with self._lock:
            batch = list(self._dirty)
            self._dirty.clear()
            self._started += 1
        try:
            self._round(batch)
        finally:
            with self._lock:
                self._completed += 1
                self._leading = False
                self._done.notify_all()
                # A waiter leads the next round itself; with none, the flusher does.
                hand = bool(self._dirty) and not self._waiters and not self._handed
                self._handed = self._handed or hand
            if hand:
                self.flusher.at(time.monotonic(), self._background)

    def _round(self, batch: list[Pending]) -> None:
        pipe = self.client.pipeline(transaction=False)
        spans: list[tuple[Pending, int, int]] = []
        for item in batch:
            start = len(pipe)
            if item.queue(pipe):
                spans.append((item, start, len(pipe)))
        if not spans:
            return
        try:
            replies = pipe.execute(raise_on_error=False)
        except BaseException as exc:  # the connection: every log of the round failed
            # Interrupted (a timeout, an exit): the logs still learn that what they
            # handed over is lost, and the interruption goes on.
            error = exc if isinstance(exc, Exception) else RuntimeError(f"interrupted: {exc!r}")
            for item, _, _ in spans:
                item.written(error)
            if error is not exc:
                raise
            return
        for item, start, end in spans:
            failed = (r for r in replies[start:end] if isinstance(r, Exception))
            item.written(next(failed, None))


_writers: weakref.WeakKeyDictionary[redis.Redis, GroupWriter] = weakref.WeakKeyDictionary()
_writers_lock = threading.Lock()


def writer_for(client: redis.Redis) -> GroupWriter:
    """The process's writer for ``client`` (made on first use)."""
    found = _writers.get(client)
    if found is not None:
        return found
    with _writers_lock:
        return _writers.setdefault(client, GroupWriter(client))


def _reset_in_child() -> None:
    # A forked child starts with no round in flight and fresh locks.
    global _writers_lock
    _writers.clear()
    _writers_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_in_child)
