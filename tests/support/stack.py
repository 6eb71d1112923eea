"""The running pipeline for end-to-end tests: real Celery worker processes and the web
app on a real port, against real Redis and a real database. Started and stopped by PID.

Workers run the default pool (threads: many turns in one process), as ``relayline
worker`` does; a test that needs prefork semantics (a pool child it can kill apart from
the worker's main process) asks for ``pool="prefork"`` and says why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.orphan_guard import guarded

ROOT = Path(__file__).resolve().parents[2]


def stack_env(redis_url: str, database_url: str, counts: Path) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "DATABASE_URL": database_url,
        "RELAYLINE_AGENT": "tests.support.agents:env_spec",
        "RELAYLINE_TEST_COUNTS": str(counts),
        "PYTHONPATH": str(ROOT),
    }


#: the pool ``relayline worker`` runs by default (shared.settings.Settings.worker_pool)
DEFAULT_POOL = "gevent"


class Worker:
    """One ``celery worker`` process: the gevent pool (``concurrency`` turns at once,
    default RELAYLINE_WORKER_CONCURRENCY), ``pool="threads"`` or, with
    ``pool="prefork"``, ``concurrency`` child processes (default 1)."""

    def __init__(
        self,
        env: dict[str, str],
        name: str,
        concurrency: int | None = None,
        pool: str = DEFAULT_POOL,
    ) -> None:
        self.log = Path(env["RELAYLINE_TEST_COUNTS"]) / f"{name}.log"
        self._log_handle = self.log.open("w")
        self.pool = pool
        if concurrency is None and pool == "prefork":
            concurrency = 1
        # worker.app reads the pool from the environment (a configured pool would
        # override Celery's ``--pool prefork``).
        env = {**env, "RELAYLINE_WORKER_POOL": pool}
        if concurrency is not None:
            env["RELAYLINE_WORKER_CONCURRENCY"] = str(concurrency)
        self.process = subprocess.Popen(
            guarded(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "relayline.worker.app",
                    "worker",
                    "-n",
                    f"{name}@%h",
                    "--pool",
                    pool,
                    "--loglevel",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                ]
            ),
            cwd=ROOT,
            env=env,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited: {self.log.read_text()[-2000:]}")
            if " ready." in self.log.read_text():
                return
            time.sleep(0.1)  # polling a log file for readiness, bounded by the deadline
        raise RuntimeError(f"celery worker not ready in {timeout}s: {self.log.read_text()[-2000:]}")

    def child_pids(self) -> list[int]:
        found = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_handle.close()


class WebServer:
    """The Flask app on a free port, served by a threaded WSGI server in this process."""

    def __init__(self, env: dict[str, str], test_config: dict[str, Any] | None = None) -> None:
        self.app = create_app(Settings.from_env(env), test_config)
        self.server: BaseWSGIServer = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()
        self.app.extensions["relayline"].close()


@contextmanager
def running_stack(
    env: dict[str, str],
    workers: int = 1,
    pool: str = DEFAULT_POOL,
    test_config: dict[str, Any] | None = None,
) -> Iterator[tuple[WebServer, list[Worker]]]:
    started: list[Worker] = []
    web: WebServer | None = None
    try:
        for index in range(workers):
            started.append(Worker(env, f"w{index}", pool=pool))
        web = WebServer(env, test_config)
        yield web, started
    finally:
        if web is not None:
            web.stop()
        for worker in started:
            worker.stop()


def fresh_env(counts: Path, redis_url: str, **extra: str) -> dict[str, str]:
    """A stack environment on an empty SQLite file (migrated before any worker touches
    it) and the Redis database ``redis_url`` that this stack alone holds."""
    from relayline.shared.persistence import Store

    database_url = f"sqlite:///{counts / 'db.sqlite'}"
    Store(database_url).dispose()
    return {**stack_env(redis_url, database_url, counts), **extra}
