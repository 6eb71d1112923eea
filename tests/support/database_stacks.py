"""The running stack (the web app and real Celery workers on a private Redis database)
over the database a module's ``"sqlite"``/``"postgresql"`` parametrized fixture asks
for: the shape of every suite that must hold on both databases."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from relayline.shared.persistence import Store
from tests.support.postgres import database_of
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, Worker, running_stack, stack_env


@dataclasses.dataclass(frozen=True)
class DatabaseStack:
    web: WebServer
    workers: list[Worker]
    #: the folder where the test agents count what they did
    counts: Path
    database_url: str


@contextmanager
def stack_on_database(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    label: str,
    env: dict[str, str] | None = None,
) -> Iterator[DatabaseStack]:
    """One worker and the web app over ``request.param``'s database (migrated before
    the worker touches it), with ``env`` over the stack's environment."""
    counts = tmp_path_factory.mktemp(label.replace(" ", "-"))
    with (
        redis_databases.database(f"{label} ({request.param})") as redis_url,
        database_of(request, counts) as database_url,
    ):
        Store(database_url).dispose()
        full_env = {**stack_env(redis_url, database_url, counts), **(env or {})}
        with running_stack(full_env, workers=1) as (web, workers):
            yield DatabaseStack(web, workers, counts, database_url)
