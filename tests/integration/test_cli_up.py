"""``relayline up`` as an operator meets it (issue 32): the URL is printed only once the
web answers, a normal start prints no warning caused by relayline, Ctrl-C in the
terminal stops everything without a traceback, and a taken port is one line naming
``--port`` with exit status 2."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from relayline.shared.settings import child_environment
from tests.support.cli_process import CliProcess
from tests.support.soketi import free_port

pytestmark = pytest.mark.integration

#: what Celery said on every start while relayline set its worker_pool to gevent
POOL_WARNING = "worker_pool setting shouldn't be used"


def up_env(tmp_path: Path) -> dict[str, str]:
    """No REDIS_URL (the embedded Redis), a SQLite file of the test's own, a small pool."""
    env = child_environment()
    env = {k: v for k, v in env.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    return env | {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'up.db'}",
        "RELAYLINE_WORKER_CONCURRENCY": "4",
    }


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[CliProcess, int]]:
    port = free_port()
    process = CliProcess(["up", "--port", str(port)], up_env(tmp_path), tmp_path)
    yield process, port
    process.stop()


def test_up_says_it_is_up_once_it_answers_and_ctrl_c_stops_it_without_a_traceback(
    up: tuple[CliProcess, int],
) -> None:
    process, port = up
    url = process.wait_for(r"relayline is up: (http://\S+)").group(1)
    # Printed once the web answers: the first request after the line is served.
    assert url == f"http://127.0.0.1:{port}/"
    assert requests.get(f"{url}healthz", timeout=10).status_code == 200
    redis_port = int(process.wait_for(r"embedded Redis on 127\.0\.0\.1:(\d+)").group(1))
    process.wait_for(r"\S+@\S+ ready\.")
    assert POOL_WARNING not in process.output
    assert "Warning" not in process.output.replace("SecurityWarning", "")  # root: Celery's

    process.interrupt()
    assert process.wait(timeout=60) == 0
    output = process.output
    stop_output = output[output.index("relayline is up") :]
    assert "Traceback" not in stop_output, stop_output
    assert "Error" not in stop_output, stop_output
    assert "stopping relayline" in stop_output
    # Everything it started is gone: the web's port and the embedded Redis.
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}healthz", timeout=5)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=redis_port, socket_connect_timeout=2).ping()


@pytest.mark.parametrize("command", ["up", "web"])
def test_a_taken_port_is_one_line_naming_the_fix_and_exit_status_2(
    command: str, tmp_path: Path
) -> None:
    env = up_env(tmp_path)
    if command == "web":
        env["REDIS_URL"] = "redis://127.0.0.1:1/0"  # required, never reached: the port is first
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = CliProcess([command, "--port", str(port)], env, tmp_path)
        try:
            status = process.wait(timeout=30)
        finally:
            process.stop()
    assert status == 2
    assert len(process.lines) == 1, process.output
    assert f"port {port}" in process.lines[0]
    assert "PORT_IN_USE" in process.lines[0]
    assert f"--port {port + 1}" in process.lines[0]
