"""A host application that embeds relayline, running for real: the host's own Celery
worker (any ``-A`` module, consuming chosen queues) in a process of its own, and the
host's Flask app on a free port in this process. Started and stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

from tests.support.stack import ROOT


class HostWorker:
    """``celery -A <module> worker -Q <queues>``: the host's worker, not relayline's."""

    def __init__(
        self,
        module: str,
        queues: str,
        env: dict[str, str],
        log: Path,
        loglevel: str = "INFO",
        *,
        python: str = sys.executable,
        cwd: Path = ROOT,
    ) -> None:
        """``env`` over this process's environment; ``python`` and ``cwd``: another
        virtual environment's interpreter and the host application's folder."""
        self.log = log
        self._handle = log.open("w")
        command = [python, "-m", "celery", "-A", module, "worker", "-Q", queues]
        command += ["-c", "1", "--loglevel", loglevel, "--without-gossip", "--without-mingle"]
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**os.environ, **env},
            stdout=self._handle,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while " ready." not in log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"host worker did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)  # polling a log file for readiness, bounded by the deadline

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._handle.close()


class HostServer:
    """The host's Flask app on a threaded WSGI server on 127.0.0.1."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()
        self.app.extensions["relayline"].close()
