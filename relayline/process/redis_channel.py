"""kombu's Redis channel keeping one ``redis.Redis`` for its commands, for the web's
publisher (web.broker) and the worker's consumer (worker.intake).

kombu's Redis channel builds a new ``redis.Redis`` (on its shared connection pool) for
every publish, queue declaration, acknowledgement and unacked record; building one
costs about as much as the command itself (measured: ~590 us per ``send_task`` in the
web, ~300 us of it in two client constructions; 168 us a construction on a slower
machine, two of them in each turn a worker runs). A ``redis.Redis`` on a pool is safe
to share between threads and greenlets (each command takes a pooled connection), so
the channel keeps one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from kombu.transport import redis as kombu_redis


class ReusingChannel(kombu_redis.Channel):
    @functools.cached_property
    def _publishing_client(self) -> Any:
        return self._create_client()  # type: ignore[attr-defined]  # untyped in kombu

    @contextlib.contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        yield client if client else self._publishing_client
