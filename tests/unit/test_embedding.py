"""The entry points of an embedding application, without services: settings from a
Flask config, relayline's tasks on a host's Celery app, and what importing costs."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from celery import Celery

from relayline.shared.settings import Settings
from tests.support.stack import ROOT

NAMES = {
    "relayline.run_turn",
    "relayline.continue_run",
    "relayline.expire_wait",
    "relayline.recover_run",
}


def test_config_overlays_the_environment_by_relayline_names_only() -> None:
    config = {
        "SECRET_KEY": "the host's session secret",  # Flask's, never relayline's
        "DATABASE_URL": "sqlite:///host.db",  # the host's, never relayline's
        "RELAYLINE_DATABASE_URL": "sqlite:///relayline.db",
        "RELAYLINE_DELIVERY": "pusher",
        "RELAYLINE_QUEUE": "turns",
        "RELAYLINE_RELAY_TIMEOUT": 12,
        "RELAYLINE_PUSHER_KEY": "k",
        "RELAYLINE_AGENTS": None,  # unset
        "DEBUG": True,
    }
    settings = Settings.from_config(config, {"REDIS_URL": "redis://env/0", "RELAYLINE_QUEUE": "x"})
    assert settings.database_url == "sqlite:///relayline.db"
    assert settings.secret_key == Settings().secret_key
    assert settings.delivery == "pusher" and settings.queue == "turns"
    assert settings.relay_timeout == 12.0 and settings.pusher.key == "k"
    assert settings.redis_url == "redis://env/0"  # from the environment beneath


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """worker.app builds relayline's app on import, from the environment (no connection
    is made: an in-memory broker)."""
    monkeypatch.setenv("CELERY_BROKER_URL", "memory://")
    monkeypatch.delenv("RELAYLINE_QUEUE", raising=False)


@pytest.mark.usefixtures("worker_env")
def test_register_puts_relaylines_tasks_on_a_host_app() -> None:
    from relayline.worker import register
    from relayline.worker.app import TASK_SOFT_TIME_LIMIT, TASK_TIME_LIMIT
    from relayline.worker.guard import GuardedRequest
    from relayline.worker.registration import BODIES

    host = Celery("host", broker="memory://")
    tasks = register(host, queue="turns")
    assert set(tasks) == NAMES and set(host.tasks) >= NAMES
    for name in NAMES:
        task: Any = host.tasks[name]  # the options are class attributes Celery sets
        assert task.queue == "turns"
        assert task.acks_late and task.reject_on_worker_lost and task.ignore_result
        assert (task.soft_time_limit, task.time_limit) == (TASK_SOFT_TIME_LIMIT, TASK_TIME_LIMIT)
        assert task.Request is GuardedRequest
        assert task.run.__func__ is BODIES[name]  # the body relayline's own app runs


@pytest.mark.usefixtures("worker_env")
def test_a_host_app_uses_relayline_queue_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from relayline.worker import register

    monkeypatch.setenv("RELAYLINE_QUEUE", "dedicated")
    host = Celery("host", broker="memory://")
    task: Any = register(host)["relayline.run_turn"]
    assert task.queue == "dedicated"


@pytest.mark.usefixtures("worker_env")
def test_relaylines_own_app_defaults_to_relayline_queue() -> None:
    from relayline.worker.app import make_celery

    queued = make_celery(Settings(redis_url="redis://127.0.0.1:1/0", queue="turns"))
    assert queued.conf.task_default_queue == "turns"
    plain = make_celery(Settings(redis_url="redis://127.0.0.1:1/0"))
    assert plain.conf.task_default_queue == "celery"


def test_the_demo_agent_imports_without_the_web_side() -> None:
    """The worker loads relayline.demo by name: the extension must not come with it."""
    code = "import sys, relayline.demo; print('relayline.web.extension' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    code = "from relayline import Relayline; print(Relayline.__module__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "relayline.web.extension", done.stderr


def _broker_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "will never receive a turn" in r.message]


@pytest.mark.usefixtures("worker_env")
def test_register_warns_once_when_the_host_app_listens_on_another_broker(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from relayline.worker import register

    # relayline's web sends turns to CELERY_BROKER_URL, else REDIS_URL
    monkeypatch.delenv("CELERY_BROKER_URL")
    monkeypatch.setenv("REDIS_URL", "redis://:secret@127.0.0.1:6390/3")
    caplog.set_level("WARNING", logger="relayline.worker")
    register(Celery("no_broker"))  # Celery's default: RabbitMQ on localhost
    register(Celery("other_redis", broker="redis://127.0.0.1:6390/4"))
    warnings = _broker_warnings(caplog)
    assert len(warnings) == 2
    assert "'no_broker' uses the broker amqp://guest:**@localhost:5672//" in warnings[0]
    assert "relayline sends turns to redis://:**@127.0.0.1:6390/3" in warnings[0]
    assert "uses the broker redis://:**@127.0.0.1:6390/4," in warnings[1]
    assert "secret" not in " ".join(warnings)


@pytest.mark.usefixtures("worker_env")
def test_register_is_quiet_when_the_host_app_shares_relaylines_broker(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from relayline.worker import register

    monkeypatch.delenv("CELERY_BROKER_URL")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6390/0")
    caplog.set_level("WARNING", logger="relayline.worker")
    register(Celery("same", broker="redis://127.0.0.1:6390"))  # database 0 by default
    monkeypatch.setenv("CELERY_BROKER_URL", "amqp://guest:guest@localhost:5672//")
    register(Celery("same_rabbit", broker="amqp://"))
    assert _broker_warnings(caplog) == []
