"""A PostgreSQL server for tests: ``RELAYLINE_TEST_POSTGRES_URL`` when given, else a
throwaway cluster this test session starts from the Debian binaries on a free port (and
stops). The local service on 127.0.0.1:5432 is never used unless named: it may hold
someone's data. On a named server tests create databases of their own and drop only
those (``fresh_database``)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield an admin URL (database ``postgres``) of a running server."""
    configured = os.environ.get("RELAYLINE_TEST_POSTGRES_URL")
    if configured:
        yield configured
        return
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not binaries:
        raise RuntimeError(
            "PostgreSQL is not installed: apt-get install postgresql (the tests start a "
            "server of their own), or name one with RELAYLINE_TEST_POSTGRES_URL."
        )
    bindir = binaries[-1]
    workdir = tempfile.mkdtemp(prefix="relayline-pg-")
    shutil.chown(workdir, "postgres") if os.geteuid() == 0 else None
    datadir = os.path.join(workdir, "data")
    port = _free_port()
    subprocess.run(
        _as_postgres([f"{bindir}/initdb", "-D", datadir, "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _as_postgres(
            [
                f"{bindir}/pg_ctl",
                "-D",
                datadir,
                "-o",
                f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1",
                "-l",
                os.path.join(workdir, "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([f"{bindir}/pg_ctl", "-D", datadir, "-m", "fast", "-w", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new, empty database on the server; dropped afterwards."""
    name = f"relayline_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def database_of(request: pytest.FixtureRequest, folder: Path) -> Iterator[str]:
    """The database a fixture parametrized with ``"sqlite"``/``"postgresql"`` asks for:
    a SQLite file in ``folder``, or a fresh database on the session's PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{folder / 'db.sqlite'}"
        return
    with fresh_database(request.getfixturevalue("postgres_admin_url")) as url:
        yield url
