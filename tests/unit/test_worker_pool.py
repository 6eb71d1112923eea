"""The worker pool settings and the commands that start workers: the threads pool with
64 turns at once by default, prefork on request, bad values refused clearly."""

from __future__ import annotations

import pytest

from relayline.cli import main, worker_command, worker_env, worker_pool
from shared.settings import Settings
from worker.resources import EXTRA_CONNECTIONS, pool_options


def test_the_default_pool_is_threads_with_64_turns_at_once() -> None:
    settings = Settings.from_env({})
    assert (settings.worker_pool, settings.worker_concurrency) == ("threads", 64)


def test_pool_and_concurrency_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {"RELAYLINE_WORKER_POOL": "prefork", "RELAYLINE_WORKER_CONCURRENCY": "3"}
    )
    assert (settings.worker_pool, settings.worker_concurrency) == ("prefork", 3)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"RELAYLINE_WORKER_POOL": "gevent"}, "RELAYLINE_WORKER_POOL must be one of"),
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
    assert worker_pool(settings, None, None) == ("threads", 64)
    assert worker_pool(settings, "prefork", 2) == ("prefork", 2)
    with pytest.raises(ValueError, match="RELAYLINE_WORKER_CONCURRENCY must be between"):
        worker_pool(settings, None, 0)


def test_relayline_worker_refuses_a_bad_concurrency_with_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["worker", "--concurrency", "0"])
    assert exited.value.code == 2
    assert "RELAYLINE_WORKER_CONCURRENCY must be between 1 and 4096" in capsys.readouterr().err


def test_the_worker_command_and_environment_name_the_pool() -> None:
    command = worker_command("threads", 64)
    assert command[command.index("--pool") + 1] == "threads"
    assert command[command.index("--concurrency") + 1] == "64"
    # worker.app reads the pool from the environment: Celery lets a configured pool
    # override ``--pool prefork``, so the environment is what selects prefork.
    env = worker_env("prefork", 2, {"PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "RELAYLINE_WORKER_POOL": "prefork",
        "RELAYLINE_WORKER_CONCURRENCY": "2",
    }


def test_the_store_pool_follows_the_concurrency() -> None:
    options = pool_options(Settings(worker_concurrency=200))
    assert options["pool_size"] == 200
    assert options["max_overflow"] == EXTRA_CONNECTIONS
