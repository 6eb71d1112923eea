from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.persistence import Store
from tests.support.postgres import fresh_database, postgres_server


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Every durable-run test runs on a SQLite file and on a real PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'relayline.db'}"
        return
    admin = request.getfixturevalue("postgres_admin_url")
    with fresh_database(admin) as url:
        yield url


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    built = Store(database_url)
    yield built
    built.dispose()


@pytest.fixture
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    built = Store(f"sqlite:///{tmp_path_factory.mktemp('db') / 'unit.db'}")
    yield built
    built.dispose()


# Redis database numbers, one owner each (suites that run their own Celery workers must
# not share a broker database, or one suite's worker takes another's tasks):
#   4 push delivery, 5 Vercel contract, 6 CopilotKit contract, 7 lm-ag-ui contract,
#   8 demo page over push, 9 the redis_url fixture, 10-12 and 14 pipeline stacks,
#   13 demo page, 15 AG-UI contract (and bench/relay.py outside the tests).


@pytest.fixture(scope="session")
def redis_base_url() -> Iterator[str]:
    from tests.support.redis_server import redis_server

    with redis_server() as url:
        yield url


@pytest.fixture
def redis_url(redis_base_url: str) -> Iterator[str]:
    """A Redis URL on database 9, flushed before and after the test."""
    import redis

    url = f"{redis_base_url}/9"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()
