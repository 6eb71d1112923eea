"""A run's stop signal, shared by the loop, the provider and tools.

The worker sets it from another thread when a stop request arrives; whoever is blocked
on I/O registers a callback that unblocks it (a provider closes its HTTP response), and
whoever loops checks :meth:`StopSignal.is_set` between steps."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from relayline.shared import green


class StopSignal:
    """Set once, never cleared. Callbacks run once, on the thread that sets the token
    (or at once on registration when it is already set); a failing callback is logged
    so that one broken hook cannot keep the others from running."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set or ``timeout`` seconds passed; whether it is set."""
        if self._event.is_set():
            return True
        if timeout is not None and green.patched():
            # A paced stream waits here once per chunk (shared.green says what it saves).
            return green.wait_or_wake(timeout, self.on_stop) or self._event.is_set()
        return self._event.wait(timeout)

    def set(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            _call(callback)

    def on_stop(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the token is set; returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key = self._next
                self._next += 1
                self._callbacks[key] = callback
                return lambda: self._forget(key)
        _call(callback)
        return lambda: None

    def _forget(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:
        logging.getLogger("relayline.stop").exception("a stop callback failed")
