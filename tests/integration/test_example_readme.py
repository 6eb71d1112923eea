"""examples/flask_app runs from its own README: the commands of its "Run it" block, run
as written from the repository's root (a free PORT and a scratch database are the only
additions), against the embedded Redis they start. A person signs in and chats through
the host's worker, and Ctrl-C (SIGTERM here) stops everything the commands started."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.support.soketi import free_port
from tests.support.stack import ROOT

pytestmark = pytest.mark.integration

README = ROOT / "examples" / "flask_app" / "README.md"
#: the block the README introduces as the way to run the example
RUN_BLOCK = re.compile(r"<!-- example: run -->\n```sh\n(.*?)\n```", re.DOTALL)


def readme_commands() -> list[str]:
    found = RUN_BLOCK.findall(README.read_text(encoding="utf-8"))
    assert len(found) == 1, "the example's README has one run block"
    commands = [line.strip() for line in found[0].splitlines()]
    return [c for c in commands if c and not c.startswith("#")]


def test_the_readme_runs_in_two_or_three_commands() -> None:
    assert 2 <= len(readme_commands()) <= 3


def _environment(tmp_path: Path, port: int) -> dict[str, str]:
    """This process's environment without any service of its own: what a reader's shell
    has (the commands must bring Redis themselves)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("RELAYLINE_", "CELERY_", "FLASK_"))
        and name not in {"REDIS_URL", "DATABASE_URL", "SECRET_KEY", "PORT"}
    }
    return {**env, "PORT": str(port), "DATABASE_URL": f"sqlite:///{tmp_path / 'example.db'}"}


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the example exited: {log.read_text()[-3000:]}"
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)  # polling for the server, bounded by the deadline
    raise AssertionError(f"the example did not serve {url}: {log.read_text()[-3000:]}")


@pytest.mark.timeout(300)
def test_the_example_runs_as_its_readme_says(tmp_path: Path) -> None:
    *setup, run = readme_commands()
    port = free_port()
    env = _environment(tmp_path, port)
    for command in setup:
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True)
        assert done.returncode == 0, f"{command}: {done.stderr.decode()[-2000:]}"
    log = tmp_path / "example.log"
    with log.open("wb") as out:
        # a session of its own: SIGTERM to its group is Ctrl-C in the reader's terminal
        process = subprocess.Popen(
            ["bash", "-c", run], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url + "/", process, log)
        session = requests.Session()
        signed_in = session.post(
            f"{url}/login", data={"username": "ann", "password": "ann-password"}, timeout=10
        )
        assert signed_in.status_code == 200 and "Hello Ann" in signed_in.text
        assert session.get(f"{url}/ai/", timeout=10).status_code == 200  # the demo page
        response = session.post(
            f"{url}/ai/api/threads/readme-1/messages",
            json={"content": "Hello there"},
            stream=True,
            timeout=60,
        )
        assert response.status_code == 200, response.text
        events = [
            json.loads(line.removeprefix("data: "))
            for line in response.iter_lines(decode_unicode=True)
            if line and line.startswith("data: ")
        ]
        text = "".join(e["content"] for e in events if e["type"] == "text")
        assert text.startswith("Hello! You said: Hello there.")
        assert events[-1]["type"] == "done" and events[-1]["status"] == "completed"
        # the turn ran on the host's own worker, started by the command
        assert "relayline.run_turn" in log.read_text()
        assert "will never receive a turn" not in log.read_text()  # one broker for both
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, log.read_text()[-3000:]
    assert "embedded Redis on 127.0.0.1:" in log.read_text()
