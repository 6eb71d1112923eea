"""The test session's PostgreSQL (tests.support.postgres): unless
RELAYLINE_TEST_POSTGRES_URL names one, a cluster of the session's own, never the
machine's service on 5432 (it may hold someone's data)."""

from __future__ import annotations

import tempfile

import pytest
import sqlalchemy as sa

from tests.support.postgres import postgres_server

pytestmark = pytest.mark.integration


def test_the_default_server_is_the_sessions_own_never_the_local_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RELAYLINE_TEST_POSTGRES_URL", raising=False)
    with postgres_server() as url:
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                port = int(conn.execute(sa.text("SHOW port")).scalar_one())
                data = str(conn.execute(sa.text("SHOW data_directory")).scalar_one())
                databases = conn.execute(sa.text("SELECT datname FROM pg_database")).scalars()
                names = set(databases)
        finally:
            engine.dispose()
        assert port != 5432
        assert url.endswith(f":{port}/postgres")
        # A cluster made for this session: a throwaway directory, only the template
        # databases and ``postgres`` in it.
        assert data.startswith(tempfile.gettempdir()), data
        assert names == {"postgres", "template0", "template1"}
    engine = sa.create_engine(url, connect_args={"connect_timeout": 2})
    try:
        with pytest.raises(sa.exc.OperationalError), engine.connect():
            pass  # stopped with the block
    finally:
        engine.dispose()
