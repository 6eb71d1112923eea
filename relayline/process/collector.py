"""The cyclic garbage collector, tuned for a process that runs many streams at once.

A relaying web process (thousands of streams, each with its greenlet, socket and request
objects) and a worker running hundreds of turns allocate a few short-lived objects per
event. With the default thresholds the collector runs so often that it took about a
fifth of the web's CPU in bench/relay.py part 3, and in a worker under a burst of 500
turns its full collections paused the whole process for 50-160 ms at a time (0.66 s
of one 10 s burst in pauses over 5 ms, most of them freeing nothing; bench/scale.py).
The startup objects (the app, its modules) never become garbage: frozen, no collection
walks them again; a larger first generation collects the per-event garbage less often
(cycles are still freed)."""

from __future__ import annotations

import gc

#: the first generation's threshold (CPython's default is 700); the older ones as default
FIRST_GENERATION = 50_000


def tune() -> None:
    """Freeze what the process holds now and raise the first threshold; call once the
    process has imported and built what it keeps (again in a forked child is fine)."""
    gc.freeze()
    gc.set_threshold(FIRST_GENERATION, 20, 20)
