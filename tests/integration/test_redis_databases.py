"""The Redis database allocator of the test session (tests.support.redis_server): each
database has one holder at a time, is empty when handed out and flushed when given back,
and running out is an error that names the holders.

Each test holds a database from the session's allocator and lets a one-database pool
over that number contend for it, so no other suite's database is touched."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest
import redis

from tests.support.redis_server import CLAIM, RedisDatabases, redis_server

pytestmark = pytest.mark.integration


@pytest.fixture
def held(redis_databases: RedisDatabases) -> Iterator[tuple[redis.Redis, RedisDatabases]]:
    """A client on a database this test holds, and a pool of that one number."""
    with (
        redis_databases.database("allocator test") as url,
        redis.Redis.from_url(url) as client,
    ):
        number = int(url.rsplit("/", 1)[1])
        yield client, RedisDatabases(redis_databases.base_url, [number])


def test_a_held_database_is_not_handed_out_and_running_out_names_the_holders(
    held: tuple[redis.Redis, RedisDatabases],
) -> None:
    _, pool = held
    with (
        pytest.raises(RuntimeError, match=r"is held, none is left for 'second'.*allocator test"),
        pool.database("second"),
    ):
        pass


def test_a_free_database_is_emptied_then_flushed_when_given_back(
    held: tuple[redis.Redis, RedisDatabases],
) -> None:
    client, pool = held
    client.delete(CLAIM)  # given back: free for the pool
    client.set("left", "over")
    with pool.database("inner") as url:
        assert url.endswith(f"/{pool.numbers[0]}")
        assert client.get("left") is None
        client.set("mine", "1")
        with pytest.raises(RuntimeError, match="inner"), pool.database("again"):
            pass
        assert client.get("mine") == b"1"  # the refused holder flushed nothing
    assert client.dbsize() == 0


def test_the_claim_of_an_exited_process_here_is_taken_over_one_elsewhere_is_kept(
    held: tuple[redis.Redis, RedisDatabases],
) -> None:
    client, pool = held
    exited = subprocess.Popen(["true"])
    exited.wait()
    client.set(CLAIM, f"{socket.gethostname()}:{exited.pid} killed session")
    with pool.database("successor"):
        assert client.get(CLAIM) == f"{socket.gethostname()}:{os.getpid()} successor".encode()
    client.set(CLAIM, "another-host:1 remote session")
    with (
        pytest.raises(RuntimeError, match="another-host:1 remote session"),
        pool.database("successor"),
    ):
        pass


def test_the_default_server_is_the_sessions_own_never_the_local_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RELAYLINE_TEST_REDIS_URL", raising=False)
    with redis_server() as url, redis.Redis.from_url(url) as client:
        assert not url.endswith(":6379")
        port = int(url.rsplit(":", 1)[1])
        # Its own process, which nothing else has written to.
        assert client.info("server")["tcp_port"] == port
        assert client.dbsize() == 0
    with pytest.raises(redis.ConnectionError):
        redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1).ping()
