"""Run liveness when every task of a worker shares one pid (the threads pool), against a
real Redis: a heartbeat open in this process is a living holder, one that closed is not,
and a duplicate heartbeat of the same run in the same process neither renews nor drops
the holder's beat (worker.liveness)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest
import redis

from relayline.channels.keys import heartbeat_key
from relayline.shared.jobs import Target, TurnJob, UserTurn
from relayline.worker.liveness import RunHeartbeat, holder, holder_alive

pytestmark = pytest.mark.integration


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


def _job(run: str) -> TurnJob:
    return TurnJob(
        thread_id=f"t-{run}",
        run_id=run,
        protocol="native",
        message=UserTurn(f"u-{run}", "hello"),
        target=Target("none"),
    )


def _beat(client: redis.Redis, run: str, *, take: bool = True) -> RunHeartbeat:
    return RunHeartbeat(client, _job(run), ttl=15, interval=5, keep_job=60, take=take)


def test_a_heartbeat_open_in_this_process_is_a_living_holder(client: redis.Redis) -> None:
    with _beat(client, "r-open"):
        # Another pool thread of this process asks (the redelivered copy of the task).
        seen: list[bool] = []
        asking = threading.Thread(target=lambda: seen.append(holder_alive(client, "r-open")))
        asking.start()
        asking.join()
        assert seen == [True]
    assert not holder_alive(client, "r-open")  # closed: nothing executes it any more


def test_a_beat_of_this_instance_that_no_open_heartbeat_owns_has_lapsed(
    client: redis.Redis,
) -> None:
    # Left by a task of this process that ended without dropping it (Redis was away).
    client.set(heartbeat_key("r-left"), f"{holder()}:0123456789abcdef", px=15_000)
    assert not holder_alive(client, "r-left")
    # The same host and pid under another instance id: host and pid prove nothing (a
    # container sharing the hostname, in a PID namespace of its own): alive until its TTL.
    other = f"{socket.gethostname()}:{os.getpid()}:0000aaaa0000:0123456789abcdef"
    client.set(heartbeat_key("r-other"), other, px=15_000)
    assert holder_alive(client, "r-other")
    # The format of earlier releases (host:pid) names no instance: alive until its TTL.
    client.set(heartbeat_key("r-old"), f"{socket.gethostname()}:{os.getpid()}", px=15_000)
    assert holder_alive(client, "r-old")


def test_another_hosts_holder_counts_as_alive(client: redis.Redis) -> None:
    client.set(heartbeat_key("r-far"), "elsewhere.example:1:abc:def", px=15_000)
    assert holder_alive(client, "r-far")


def test_a_duplicate_in_the_same_process_leaves_the_holders_beat(client: redis.Redis) -> None:
    with _beat(client, "r-dup") as holding:
        assert client.get(heartbeat_key("r-dup")) == holding.stamp.encode()
        # A copy of the task that found the holder alive beats only once the run is free.
        with _beat(client, "r-dup", take=False) as duplicate:
            assert duplicate.stamp != holding.stamp
            assert client.get(heartbeat_key("r-dup")) == holding.stamp.encode()
        # The copy ended: the holder's beat is still there, and still the holder's.
        assert client.get(heartbeat_key("r-dup")) == holding.stamp.encode()
        assert holder_alive(client, "r-dup")
    assert not client.exists(heartbeat_key("r-dup"))
