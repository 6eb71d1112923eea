"""Whether this process runs under gevent's monkey patching, and what only such a
process may do: wait on the hub without gevent's exception-based timeouts."""

from __future__ import annotations

import sys
from collections.abc import Callable

#: wakes a waiting greenlet; callable from any greenlet or thread
Wake = Callable[[], None]


def patched(module: str = "threading") -> bool:
    """Whether gevent patched ``module`` in this process (one that never imported
    gevent.monkey is unpatched)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched(module))


def wait_or_wake(timeout: float, on_wake: Callable[[Wake], Callable[[], None]]) -> bool:
    """Block this greenlet ``timeout`` seconds or until woken; whether it was woken.

    ``on_wake(wake)`` registers ``wake`` and
    returns what unregisters it. gevent's own ``Event.wait(timeout)`` raises a Timeout
    into the greenlet when the time is up: measured under 500 paced turns, that
    exception was most of what a wait cost (a sixth of the worker's CPU). A timer that
    switches back with a value costs no exception."""
    from gevent import get_hub
    from gevent.hub import Waiter

    hub = get_hub()
    waiter: Waiter[bool] = Waiter(hub)
    timer = hub.loop.timer(timeout)

    def wake() -> None:
        hub.loop.run_callback_threadsafe(waiter.switch, True)

    forget = on_wake(wake)
    timer.start(waiter.switch, False)
    try:
        return bool(waiter.get())
    finally:
        timer.close()
        forget()
