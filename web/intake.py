"""Intake slots: at most RELAYLINE_WEB_INTAKE_SLOTS requests of this process at once do
the work that comes before a POST's response starts (authorisation, the thread's row,
admission, announcing the segment, sending the job); the rest wait their turn in
arrival order. A relayed body, once the job is sent, holds no slot.

Why: under gevent every greenlet runs until its next round trip, so 500 turns posted at
once advanced in lockstep, one round trip at a time each, and the first job left the web
only when nearly all of them had done the work before it (1.1 s, bench/scale.py): the
worker sat idle meanwhile and every turn waited for the slowest. With slots, jobs leave
in arrival order from the first millisecond and the worker starts on them at once."""

from __future__ import annotations

import threading

from flask import Blueprint, Response, g, request

_LOCK = threading.Lock()


class IntakeSlots:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        # Made at the first request, in the serving process: a semaphore made before
        # gevent patched threading would block the whole hub.
        self._semaphore: threading.BoundedSemaphore | None = None

    def init_app(self, app: Blueprint) -> None:
        app.before_request(self._enter)
        app.after_request(self._leave_with)
        app.teardown_request(self._leave_on_error)

    def _enter(self) -> None:
        if request.method != "POST":
            return
        if self._semaphore is None:
            with _LOCK:
                if self._semaphore is None:
                    self._semaphore = threading.BoundedSemaphore(self.slots)
        self._semaphore.acquire()
        g.relayline_intake_slot = True

    def _leave(self) -> None:
        if g.pop("relayline_intake_slot", False):
            assert self._semaphore is not None
            self._semaphore.release()

    def _leave_with(self, response: Response) -> Response:
        self._leave()  # before the body: a relayed stream holds no slot
        return response

    def _leave_on_error(self, _error: BaseException | None) -> None:
        self._leave()  # a request that ended without a response
