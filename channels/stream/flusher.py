"""One thread per process that runs actions at their deadlines: what writes a segment
log's buffered envelopes when no later append comes to write them (the last delta
before a long tool call must not wait for the call to end).

Started lazily by the first ``at`` in the process that uses it, and reset in a forked
child (a prefork pool's children start with no thread and a fresh lock), so importing
it costs nothing and a fork never inherits a lock held by a thread it lost.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("relayline.channel")

Action = Callable[[], None]


class Flusher:
    """A heap of (deadline, action) served by one daemon thread; thread-safe."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, Action]] = []
        self._order = itertools.count()  # ties keep their order; actions never compare
        self._thread: threading.Thread | None = None

    def at(self, deadline: float, action: Action) -> None:
        """Run ``action`` at ``deadline`` (``time.monotonic()`` seconds) or soon after."""
        with self._wake:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="relayline-log-flusher", daemon=True
                )
                self._thread.start()
            entry = (deadline, next(self._order), action)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # a sooner deadline than the thread waits for
                self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap:
                    self._wake.wait()
                left = self._heap[0][0] - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                _, _, action = heapq.heappop(self._heap)
            try:
                action()
            except Exception:  # an action reports its own failures; never kill the thread
                logger.exception("log flusher action failed")


#: the process's flusher
FLUSHER = Flusher()
os.register_at_fork(after_in_child=FLUSHER._reset)
