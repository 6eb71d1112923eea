"""Run liveness against a real Redis and a real store: the heartbeat a task keeps, and
the sweep that finds runs whose heartbeat lapsed (worker.liveness)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
import sqlalchemy as sa

from relayline.channels.keys import heartbeat_key, job_key
from relayline.shared.jobs import RecoverJob, Target, TurnJob, UserTurn
from relayline.shared.messages import Message
from relayline.shared.persistence import RunRecord, Store
from relayline.shared.persistence.schema import runs
from relayline.shared.records import Checkpoint
from relayline.worker.liveness import RunHeartbeat, Sweeper, lapsed

pytestmark = pytest.mark.integration


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


def _running(store: Store, thread: str, *, executor: str | None = "task-1") -> RunRecord:
    return store.begin_run(
        thread,
        f"run-{thread}",
        owner="anonymous",
        start={"message": f"u-{thread}", "frontendTools": []},
        first_messages=[Message.user("hello", id=f"u-{thread}")],
        lease_expires_at=datetime.now(UTC) + timedelta(seconds=600),
        checkpoint=Checkpoint(executor=executor) if executor else None,
    )


def _job(thread: str, target: Target) -> TurnJob:
    return TurnJob(
        thread_id=thread,
        run_id=f"run-{thread}",
        protocol="agui",
        message=UserTurn(f"u-{thread}", "hello"),
        target=target,
    )


class Sent:
    def __init__(self) -> None:
        self.jobs: list[RecoverJob] = []

    def __call__(self, job: RecoverJob) -> None:
        self.jobs.append(job)


def _sweeper(store: Store, client: redis.Redis, sent: Sent) -> Sweeper:
    return Sweeper(store, client, sent, Target("none"), ttl=15.0, interval=5.0)


def test_a_lapsed_run_is_recovered_once_where_its_job_delivered(
    sqlite_store: Store, client: redis.Redis
) -> None:
    record = _running(sqlite_store, "lost")
    relay = Target("relay", "relayline:relay:abc")
    # What the lost task left: its job, and a heartbeat that has lapsed since.
    with RunHeartbeat(client, _job("lost", relay), ttl=15, interval=5, keep_job=60):
        assert client.exists(heartbeat_key(record.run_id))
    assert not client.exists(heartbeat_key(record.run_id))
    assert client.exists(job_key(record.run_id))
    sent = Sent()
    sweeper = _sweeper(sqlite_store, client, sent)

    later = datetime.now(UTC) + timedelta(seconds=16)  # nothing written for a whole ttl
    assert [r.run_id for r in _lapsed(sqlite_store, client, later)] == [record.run_id]
    # The sweep itself uses the clock: this run was written just now, so it waits.
    assert sweeper.sweep() == []
    _age(sqlite_store, record, seconds=16)

    (job,) = sweeper.sweep()
    assert (job.run_id, job.attempt, job.protocol, job.target) == (
        record.run_id,
        1,
        "agui",
        relay,
    )
    assert sent.jobs == [job]
    assert sweeper.sweep() == []  # claimed: one recovery per run and attempt


def test_a_beating_run_and_an_in_process_run_are_left_alone(
    sqlite_store: Store, client: redis.Redis
) -> None:
    beating = _running(sqlite_store, "alive")
    local = _running(sqlite_store, "local", executor=None)  # Agent.run in some process
    _age(sqlite_store, beating, seconds=60)
    _age(sqlite_store, local, seconds=60)
    sent = Sent()
    with RunHeartbeat(client, _job("alive", Target("none")), ttl=15, interval=5, keep_job=60):
        assert _sweeper(sqlite_store, client, sent).sweep() == []
    assert sent.jobs == []


def test_without_a_recorded_job_the_recovery_goes_natively_to_the_fallback(
    sqlite_store: Store, client: redis.Redis
) -> None:
    record = _running(sqlite_store, "bare")
    _age(sqlite_store, record, seconds=60)
    sent = Sent()
    (job,) = Sweeper(sqlite_store, client, sent, Target("pusher"), ttl=15.0, interval=5.0).sweep()
    assert (job.protocol, job.target, job.thread_id) == ("native", Target("pusher"), "bare")


def test_the_heartbeat_is_renewed_while_open(client: redis.Redis) -> None:
    job = _job("renewed", Target("none"))
    with RunHeartbeat(client, job, ttl=1.0, interval=0.1, keep_job=60):
        opened = time.monotonic()
        # Unrenewed, the key would be gone after 1 s; watch it for more than twice that
        # (renewals every 0.1 s leave a loaded machine 0.9 s of slack).
        while time.monotonic() - opened < 2.5:
            assert client.exists(heartbeat_key(job.run_id))
            time.sleep(0.05)  # the passing of time is what is tested, bounded above
    assert not client.exists(heartbeat_key(job.run_id))


def _lapsed(store: Store, client: redis.Redis, now: datetime) -> list[RunRecord]:
    return lapsed(store, client, ttl=15.0, now=now)


def _age(store: Store, record: RunRecord, *, seconds: float) -> None:
    """Backdate the run's last write (the sweep trusts the database clock)."""
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(runs)
            .where(runs.c.run_id == record.run_id)
            .values(updated=datetime.now(UTC) - timedelta(seconds=seconds))
        )
