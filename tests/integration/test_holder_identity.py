"""A lease holder's identity is its instance id, never its host and pid (worker.liveness):
two live workers in separate PID namespaces under one hostname (containers sharing it)
can carry the same host and pid, and neither may take the other's run for dead.

The second holder is a real process holding a real heartbeat in Redis, whose pid reads
as this test's own (``os.getpid`` patched before it stamps its beat): the stamp a worker
in another PID namespace would write. Fails where host and pid equality is taken as
proof that the holder is gone.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

from relayline.channels.keys import heartbeat_key
from relayline.worker.liveness import holder, holder_alive, instance_id

pytestmark = pytest.mark.integration

#: the second holder: opens a heartbeat of run ``r-twin`` with this test's pid and waits
_TWIN = """
import os, sys
pid = int(sys.argv[2])
os.getpid = lambda: pid  # as a process in another PID namespace may be numbered
from relayline.shared.jobs import Target, TurnJob, UserTurn
from relayline.worker.liveness import RunHeartbeat
import redis
client = redis.Redis.from_url(sys.argv[1])
job = TurnJob(thread_id="t-twin", run_id="r-twin", protocol="native",
              message=UserTurn("u-twin", "hi"), target=Target("none"))
with RunHeartbeat(client, job, ttl=15, interval=5, keep_job=60):
    print("holding", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


def test_a_live_holder_with_our_host_and_pid_is_not_taken_for_dead(
    client: redis.Redis, redis_url: str
) -> None:
    twin = subprocess.Popen(
        [sys.executable, "-c", _TWIN, redis_url, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert twin.stdout is not None
        assert twin.stdout.readline().strip() == "holding"
        raw = client.get(heartbeat_key("r-twin"))
        assert isinstance(raw, bytes)
        host, pid, instance, _token = raw.decode().split(":")
        # Everything an operator reads says "this process"; only the instance differs.
        assert (host, int(pid)) == (socket.gethostname(), os.getpid())
        assert instance != instance_id()
        assert holder().startswith(f"{host}:{pid}:")
        # The twin lives: its run is not taken over, now or while its beat is renewed.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert holder_alive(client, "r-twin")
        assert twin.poll() is None
    finally:
        if twin.stdin is not None:
            twin.stdin.close()
        twin.wait(timeout=10)
        if twin.stdout is not None:
            twin.stdout.close()
    # Gone (its heartbeat was dropped on the way out): now it is not alive.
    assert not holder_alive(client, "r-twin")


def test_a_killed_twin_lapses_only_with_its_ttl(client: redis.Redis, redis_url: str) -> None:
    """A holder that died without dropping its beat (SIGKILL) is alive until the beat's
    TTL: host and pid never shortcut it, even when they are ours."""
    twin = subprocess.Popen(
        [sys.executable, "-c", _TWIN, redis_url, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert twin.stdout is not None
    assert twin.stdout.readline().strip() == "holding"
    twin.kill()
    twin.wait(timeout=10)
    if twin.stdin is not None:
        twin.stdin.close()
    twin.stdout.close()
    assert holder_alive(client, "r-twin")
    client.pexpire(heartbeat_key("r-twin"), 1)  # as its TTL lapsing would
    deadline = time.monotonic() + 5.0
    while client.exists(heartbeat_key("r-twin")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not holder_alive(client, "r-twin")
