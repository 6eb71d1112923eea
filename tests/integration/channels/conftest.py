from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.channel_redis import FlakyRedis, flaky


@pytest.fixture
def client(redis_url: str) -> Iterator[FlakyRedis]:
    """A real client on the test database, with fault injection switched off."""
    built = flaky(redis_url)
    yield built
    built.close()


@pytest.fixture
def name() -> str:
    # Pub/Sub ignores database numbers: a unique name keeps parallel runs apart.
    return f"relayline:test:{uuid.uuid4().hex}"
