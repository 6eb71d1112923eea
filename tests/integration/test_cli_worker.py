"""``relayline worker`` (issue 32): every worker has a node name of its own by default
(``relayline-<pid>@<host>``: Celery's ``celery@<host>`` is the same for all workers of a
host), ``--name`` sets it, and a configuration mistake is one line with exit status 2."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from relayline.shared.settings import child_environment
from tests.support.cli_process import CliProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def worker_env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **child_environment(),
        "REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'worker.db'}",
        "RELAYLINE_WORKER_CONCURRENCY": "2",
    }


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path) -> Iterator[list[CliProcess]]:
    started = [
        CliProcess(["worker"], worker_env, tmp_path),
        CliProcess(["worker", "--name", "relayline-named@%h"], worker_env, tmp_path),
    ]
    yield started
    for process in started:
        process.stop()


def test_workers_on_one_host_have_names_of_their_own(workers: list[CliProcess]) -> None:
    default, named = workers
    host = socket.gethostname()
    # The PID stays the command's through execve (orphan guard, relayline, celery).
    assert default.wait_for(r"(\S+@\S+) ready\.").group(1) == (
        f"relayline-{default.process.pid}@{host}"
    )
    assert named.wait_for(r"(\S+@\S+) ready\.").group(1) == f"relayline-named@{host}"


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["worker", "--concurrency", "0"], {}, "RELAYLINE_WORKER_CONCURRENCY"),
        (["worker"], {"REDIS_URL": ""}, "REDIS_URL"),
        (["web"], {"REDIS_URL": ""}, "REDIS_URL"),
        (["worker"], {"RELAYLINE_WORKER_POOL": "eventlet"}, "RELAYLINE_WORKER_POOL"),
    ],
)
def test_a_configuration_mistake_is_one_line_and_exit_status_2(
    args: list[str],
    env: dict[str, str],
    named: str,
    worker_env: dict[str, str],
    tmp_path: Path,
) -> None:
    process = CliProcess(args, {**worker_env, **env}, tmp_path)
    try:
        assert process.wait(timeout=60) == 2
    finally:
        process.stop()
    (line,) = process.lines
    assert line.startswith("relayline: invalid configuration (CONFIG_INVALID): "), line
    assert named in line
