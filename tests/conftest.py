from __future__ import annotations

from collections.abc import Iterator

import pytest

from relayline.shared.persistence import Store
from tests.support.isolation import forget_service_urls
from tests.support.mercure_hub import MercureHub, mercure_hub
from tests.support.postgres import fresh_database, postgres_server
from tests.support.pusher_js import CLIENT as PUSHER_CLIENT
from tests.support.redis_server import RedisDatabases, redis_server
from tests.support.soketi import Soketi, ensure_node_modules, soketi_server
from tests.support.vercel import VercelSchema, vercel_schema_checker

# Before any test reads its settings: the shell's REDIS_URL or DATABASE_URL may be someone's.
forget_service_urls()

# The channel behaviour suite keeps its asserts in a plain module that the unit (memory)
# and integration (Redis, Pusher, Mercure) suites run: have pytest explain its failures.
pytest.register_assert_rewrite("tests.support.channel_behaviour")


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


@pytest.fixture(scope="session")
def vercel_schema() -> VercelSchema:
    """The ``ai`` package's checker (Node.js), for every suite that checks Vercel streams."""
    return vercel_schema_checker()


@pytest.fixture(scope="session")
def redis_base_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_databases(redis_base_url: str) -> RedisDatabases:
    """Database numbers of the test server, one holder each: every stack that runs Celery
    workers takes its broker database here (``with redis_databases.database(...)``)."""
    return RedisDatabases(redis_base_url)


@pytest.fixture
def redis_url(redis_databases: RedisDatabases, request: pytest.FixtureRequest) -> Iterator[str]:
    """A Redis database of this test's own, empty at the start and flushed at the end."""
    with redis_databases.database(request.node.nodeid) as url:
        yield url


# One soketi and one Mercure hub for the whole session, shared by every suite: each test
# uses channels and topics named after its own threads, so none reads another's.


@pytest.fixture(scope="session")
def soketi() -> Iterator[Soketi]:
    ensure_node_modules(PUSHER_CLIENT)  # the pusher-js client the suites read it with
    with soketi_server() as server:
        yield server


@pytest.fixture(scope="session")
def hub() -> Iterator[MercureHub]:
    with mercure_hub() as running:
        yield running
