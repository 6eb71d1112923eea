"""The production web server (``relayline web``'s gunicorn command, one gevent worker) in
a process group of its own, so that a test can kill it whole, as a crash or a lost
node would, and start another in its place."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import requests

from relayline.cli import web_command
from tests.support.orphan_guard import guarded
from tests.support.soketi import free_port
from tests.support.stack import ROOT


class WebProcess:
    def __init__(self, env: dict[str, str], log_dir: Path, name: str) -> None:
        self.port = free_port()
        self.log = log_dir / f"{name}.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                guarded(web_command("127.0.0.1", self.port)),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: master and worker die together
            )
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log.read_text()[-2000:]}")
            try:
                if requests.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or its worker is still booting (a loaded machine)
            time.sleep(0.1)  # polling a starting server, bounded by the deadline
        raise RuntimeError(f"gunicorn not ready in {timeout}s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the whole server (master and worker): no goodbye to any client."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
