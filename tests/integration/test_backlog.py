"""The queued-turn count against a real Redis (channels.backlog): the limits, removal
at start, and entries whose removal was lost trimmed by age."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.client import Pipeline

from relayline.channels.runs.backlog import Refusal, admit, depth, started

pytestmark = pytest.mark.integration


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


def _admit(client: redis.Redis, member: str, owner: str, max_age: float = 60) -> Refusal | None:
    return admit(client, member, owner, limit=3, owner_limit=2, max_age=max_age)


def test_limits_and_removal(client: redis.Redis) -> None:
    assert _admit(client, "a1", "alice") is None
    assert _admit(client, "a2", "alice") is None
    assert _admit(client, "a3", "alice") is Refusal.OWNER
    assert _admit(client, "b1", "bob") is None
    assert _admit(client, "b2", "bob") is Refusal.GLOBAL
    assert depth(client, 60) == 3
    started(client, "a1", "alice")  # a worker began it
    started(client, "a1", "alice")  # a redelivery: nothing more to remove
    assert depth(client, 60) == 2
    assert _admit(client, "a3", "alice") is None


def test_a_lost_removal_is_trimmed_by_age(client: redis.Redis) -> None:
    assert admit(client, "lost", "alice", limit=1, owner_limit=1, max_age=1) is None
    assert admit(client, "next", "alice", limit=1, owner_limit=1, max_age=1) is Refusal.GLOBAL
    deadline = time.monotonic() + 10
    while depth(client, 1) != 0:  # the killed task never removed it
        assert time.monotonic() < deadline, "the lost entry was never trimmed"
        time.sleep(0.1)  # the passing of time is what is tested, bounded above
    assert admit(client, "next", "alice", limit=1, owner_limit=1, max_age=1) is None


@pytest.mark.parametrize("limited", [True, False], ids=["limited", "unlimited"])
def test_what_follows_admission_runs_only_for_an_admitted_turn(
    client: redis.Redis, limited: bool
) -> None:
    # The web announces the segment with ``then``: in the admission's own round trip
    # when no limit can refuse, after it otherwise, and never for a refused turn.
    limit = 1 if limited else 0

    def announce(member: str) -> Callable[[Pipeline], None]:
        def queue(pipe: Pipeline) -> None:
            pipe.set(f"then:{member}", "announced")

        return queue

    for member in ("first", "second"):
        admit(
            client, member, "alice", limit=limit, owner_limit=0, max_age=60, then=announce(member)
        )
    assert client.get("then:first") == b"announced"
    assert (client.get("then:second") is None) is limited
    assert depth(client, 60) == (1 if limited else 2)
    client.delete("then:first", "then:second")
