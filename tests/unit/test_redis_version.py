"""redis-py's version is read from package metadata once per process, not on every new
connection (a burst of turns opens hundreds)."""

from __future__ import annotations

from importlib import metadata

import pytest
import redis
import redis.utils

import relayline.web.services  # noqa: F401  (importing the web installs it)
from relayline.process import redis_version


def test_new_connections_do_not_read_the_package_metadata_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "memory://")  # worker.app builds its app on import
    import relayline.worker.app  # noqa: F401  (importing the worker installs it too)

    redis_version.read_once()  # idempotent: a second call keeps the one memo
    redis.utils.get_lib_version()  # type: ignore[no-untyped-call]  # the first read
    reads: list[str] = []
    real = metadata.version

    def counted(name: str) -> str:
        reads.append(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", counted)
    pool = redis.ConnectionPool.from_url("redis://127.0.0.1:1/0")
    first = redis.Connection(**pool.connection_kwargs)  # type: ignore[no-untyped-call]
    second = redis.Connection(**pool.connection_kwargs)  # type: ignore[no-untyped-call]
    assert reads == []  # never read again
    assert first.driver_info is not None and second.driver_info is not None
    assert first.driver_info.lib_version == real("redis")
    assert hasattr(redis.utils.get_lib_version, "cache_info")
