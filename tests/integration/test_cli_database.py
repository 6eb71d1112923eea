"""The database as hosts give it and as it fails (issue 32): ``postgres://`` URLs work,
and a server that is not there, or a database that does not exist, is one line with
DATABASE_UNREACHABLE and exit status 2, never a driver's traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from relayline.shared.settings import child_environment
from tests.support.postgres import fresh_database
from tests.support.stack import ROOT

pytestmark = pytest.mark.integration


def relayline(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relayline.cli", *args],
        cwd=tmp_path,
        env={**child_environment(), "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def postgres_database(postgres_admin_url: str) -> Iterator[str]:
    """A fresh database's URL as a host gives it: ``postgres://user@host:port/name``."""
    with fresh_database(postgres_admin_url) as url:
        yield url.replace("postgresql+psycopg://", "postgres://", 1)


def test_a_postgres_url_as_hosts_give_it_is_migrated(
    postgres_database: str, tmp_path: Path
) -> None:
    done = relayline(["migrate"], tmp_path, DATABASE_URL=postgres_database)
    assert done.returncode == 0, done.stderr
    engine = sa.create_engine(postgres_database.replace("postgres://", "postgresql+psycopg://"))
    try:
        assert {"threads", "runs"} <= set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound and never listening: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["migrate", "up", "web", "worker"])
def test_an_unreachable_database_is_one_line_and_exit_status_2(
    command: str, refusing_port: int, tmp_path: Path
) -> None:
    url = f"postgres://relayline:hunter2-secret@127.0.0.1:{refusing_port}/relayline"
    done = relayline([command], tmp_path, DATABASE_URL=url, REDIS_URL="redis://127.0.0.1:1/0")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "DATABASE_UNREACHABLE" in line
    assert f"127.0.0.1:{refusing_port}/relayline" in line
    assert "Connection refused" in line
    assert "hunter2-secret" not in line


def test_a_database_that_does_not_exist_is_one_line_naming_it(
    postgres_admin_url: str, tmp_path: Path
) -> None:
    missing = postgres_admin_url.rsplit("/", 1)[0] + "/relayline_no_such_database"
    done = relayline(["migrate"], tmp_path, DATABASE_URL=missing)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert "DATABASE_UNREACHABLE" in line
    assert 'database "relayline_no_such_database" does not exist' in line
