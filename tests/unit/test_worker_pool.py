"""The worker pool settings and the commands that start workers: the gevent pool with
64 turns at once by default, threads or prefork on request, bad values refused clearly,
and gevent asked of a process gevent has not patched runs the threads pool instead."""

from __future__ import annotations

import logging
import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from relayline.cli import main, web_env, worker_command, worker_env, worker_pool
from relayline.shared.settings import Settings
from relayline.worker.resources import EXTRA_CONNECTIONS, MAX_POOL_SIZE, pool_options

if TYPE_CHECKING:
    from celery.worker import WorkController


def test_the_default_pool_is_gevent_with_64_turns_at_once() -> None:
    settings = Settings.from_env({})
    assert (settings.worker_pool, settings.worker_concurrency) == ("gevent", 64)


def test_pool_and_concurrency_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {"RELAYLINE_WORKER_POOL": "prefork", "RELAYLINE_WORKER_CONCURRENCY": "3"}
    )
    assert (settings.worker_pool, settings.worker_concurrency) == ("prefork", 3)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"RELAYLINE_WORKER_POOL": "eventlet"}, "RELAYLINE_WORKER_POOL must be one of"),
        ({"RELAYLINE_WORKER_CONCURRENCY": "0"}, "RELAYLINE_WORKER_CONCURRENCY must be positive"),
        ({"RELAYLINE_WORKER_CONCURRENCY": "many"}, "RELAYLINE_WORKER_CONCURRENCY must be a int"),
        ({"RELAYLINE_WORKER_CONCURRENCY": "5000"}, "between 1 and 4096"),
    ],
)
def test_bad_pool_settings_are_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(environ)


def test_options_override_the_settings_and_are_checked_like_them() -> None:
    settings = Settings()
    assert worker_pool(settings, None, None) == ("gevent", 64)
    assert worker_pool(settings, "prefork", 2) == ("prefork", 2)
    with pytest.raises(ValueError, match="RELAYLINE_WORKER_CONCURRENCY must be between"):
        worker_pool(settings, None, 0)


def test_relayline_worker_refuses_a_bad_concurrency_with_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["worker", "--concurrency", "0"]) == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line, no usage text
    assert "RELAYLINE_WORKER_CONCURRENCY must be between 1 and 4096" in line


def test_the_worker_command_and_environment_name_the_pool() -> None:
    command = worker_command("threads", 64)
    assert command[command.index("--pool") + 1] == "threads"
    # A node name of this process's own (Celery's celery@<host> is every worker's).
    assert command[command.index("--hostname") + 1] == f"relayline-{os.getpid()}@%h"
    assert command[command.index("--concurrency") + 1] == "64"
    # worker.app reads the pool from the environment: Celery lets a configured pool
    # override ``--pool prefork``, so the environment is what selects prefork.
    env = worker_env("prefork", 2, {"PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "RELAYLINE_WORKER_POOL": "prefork",
        "RELAYLINE_WORKER_CONCURRENCY": "2",
    }


@pytest.fixture
def broker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # worker.app builds its module-level app from the environment on import.
    monkeypatch.setenv("CELERY_BROKER_URL", "memory://")


@pytest.mark.usefixtures("broker_env")
def test_gevent_in_an_unpatched_process_runs_the_threads_pool(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This test process is not monkey patched: a worker started without --pool gevent
    # (a bare ``celery -A worker.app worker``) would be, nor is its socket module.
    import relayline.worker.app
    from relayline.worker.app import _explain_pool, make_celery

    url = "redis://127.0.0.1:1/0"
    monkeypatch.setenv("RELAYLINE_WORKER_POOL", "gevent")
    with caplog.at_level(logging.WARNING, logger="relayline.worker.app"):
        fallen_back = make_celery(Settings(redis_url=url, worker_pool="gevent"))
        host_app = make_celery(Settings(redis_url=url, worker_pool="threads"))
        # Building the app (any import of worker.app) says nothing: a host's own worker
        # that only sends through it must not read a warning meant for another pool.
        assert caplog.text == ""
        _explain_pool(sender=cast("WorkController", SimpleNamespace(app=host_app)))
        assert caplog.text == ""
        monkeypatch.setattr(relayline.worker.app, "app", fallen_back)
        _explain_pool(sender=cast("WorkController", SimpleNamespace(app=fallen_back)))
    assert fallen_back.conf.relayline_pool == fallen_back.conf.worker_pool == "threads"
    assert "start the worker with --pool gevent" in caplog.text
    assert make_celery(Settings(redis_url=url, worker_pool="prefork")).conf.worker_pool == "prefork"


@pytest.mark.usefixtures("broker_env")
def test_the_broker_pool_holds_a_connection_per_turn_slot() -> None:
    # Each turn acknowledges its own task (acks_late): kombu's default of 10
    # connections refused the acknowledgements of 500 turns ending together.
    from relayline.worker.app import BROKER_SPARE_CONNECTIONS, make_celery

    app = make_celery(Settings(redis_url="redis://127.0.0.1:1/0", worker_concurrency=500))
    options = app.conf.broker_transport_options
    assert options["max_connections"] == 500 + BROKER_SPARE_CONNECTIONS


def test_the_store_pool_follows_the_concurrency_up_to_its_cap() -> None:
    small = pool_options(Settings(worker_concurrency=8))
    assert (small["pool_size"], small["max_overflow"]) == (8, EXTRA_CONNECTIONS)
    # 200 turns share MAX_POOL_SIZE connections: one each would exceed PostgreSQL's
    # default max_connections (100) on its own.
    large = pool_options(Settings(worker_concurrency=200))
    assert large["pool_size"] == MAX_POOL_SIZE < 100
    assert large["max_overflow"] == EXTRA_CONNECTIONS


def test_a_gevent_worker_turns_amqp_heartbeats_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under gevent, Celery's synloop with AMQP heartbeats on received about 10 tasks a
    # second (bench/scale.py, RabbitMQ broker); threads and prefork keep Celery's default.
    from relayline.shared import green
    from relayline.worker.app import make_celery

    url = "amqp://guest:guest@127.0.0.1:1//"
    monkeypatch.setattr(green, "patched", lambda module="threading": True)
    app = make_celery(Settings(redis_url="redis://127.0.0.1:1/0", celery_broker_url=url))
    assert app.conf.relayline_pool == "gevent"
    # Celery's own setting stays unset for gevent: Celery warns about it on every start.
    assert app.conf.worker_pool != "gevent"
    assert app.conf.broker_heartbeat == 0
    threads = make_celery(
        Settings(redis_url="redis://127.0.0.1:1/0", celery_broker_url=url, worker_pool="threads")
    )
    assert threads.conf.broker_heartbeat == 120


@pytest.mark.usefixtures("broker_env")
def test_the_worker_takes_waiting_turns_in_batches_on_redis_only() -> None:
    # worker.intake (tests/integration/test_batched_intake.py); RabbitMQ keeps its own
    from relayline.worker.app import make_celery

    redis_app = make_celery(Settings(redis_url="redis://127.0.0.1:1/0"))
    assert redis_app.conf.broker_transport == "relayline.worker.intake:Transport"
    amqp = make_celery(
        Settings(redis_url="redis://127.0.0.1:1/0", celery_broker_url="amqp://guest@127.0.0.1:1//")
    )
    assert amqp.conf.broker_transport is None


def test_the_web_maps_large_blocks_unless_the_operator_chose_otherwise() -> None:
    # Freed large frames go back to the system (bench/slow_clients.py measures it).
    assert web_env({"PATH": "/bin"}) == {"PATH": "/bin", "MALLOC_MMAP_THRESHOLD_": "131072"}
    assert web_env({"MALLOC_MMAP_THRESHOLD_": "65536"})["MALLOC_MMAP_THRESHOLD_"] == "65536"
