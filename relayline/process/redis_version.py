"""redis-py's version, read from its package metadata once per process, not once per
connection.

redis-py sends its version (CLIENT SETINFO) on every new connection and reads it each
time with ``importlib.metadata.version``: about 0.8 ms of CPU here (a scan of sys.path
and an e-mail header parse of METADATA), half of what opening a connection costs. A
burst of turns opens connections by the hundred (500 posted at once: one per greenlet
in the web and in the worker, kombu's included), so that read was about a tenth of the
web's CPU in bench/scale.py's 500-turn burst (py-spy). The installed version cannot
change under a running process.
"""

from __future__ import annotations

import functools

import redis.utils


def read_once() -> None:
    """Memoize redis-py's version lookup for this process (idempotent)."""
    lookup = redis.utils.get_lib_version
    if not hasattr(lookup, "cache_info"):  # not memoized yet
        redis.utils.get_lib_version = functools.cache(lookup)
