"""A soketi (Pusher protocol) server for tests: ``RELAYLINE_TEST_PUSHER_URL`` when given
(``http://<key>:<secret>@<host>:<port>/apps/<id>``), else one this session starts.

soketi comes from npm (``tests/node/soketi``, installed with ``npm ci`` on first use)
and is started only with every loopback setting of ``docs/reference/peers.md``: bound
to 127.0.0.1, metrics on 127.0.0.1, cluster discovery unicast to 127.0.0.1 (never the
UDP broadcast), 10 KB events like Pusher's. It is stopped by its PID.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pusher
import requests

NODE = Path(__file__).resolve().parents[1] / "node"
SOKETI_DIR = NODE / "soketi"
_URL = re.compile(
    r"(?P<scheme>https?)://(?P<key>[^:]+):(?P<secret>[^@]+)@(?P<host>[^:/]+)"
    r":(?P<port>\d+)/apps/(?P<app_id>\d+)"
)


@dataclasses.dataclass(frozen=True)
class Soketi:
    host: str
    port: int
    app_id: str
    key: str
    secret: str

    def client(self, **options: Any) -> Any:
        """A ``pusher.Pusher`` for this server (options such as the master key)."""
        return pusher.Pusher(
            app_id=self.app_id,
            key=self.key,
            secret=self.secret,
            host=self.host,
            port=self.port,
            ssl=False,
            **options,
        )


def ensure_node_modules(directory: Path) -> None:
    """``npm ci`` the folder's locked dependencies unless they are installed."""
    if (directory / "node_modules").is_dir():
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=directory,
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM the process by its PID and wait for it to exit (SIGKILL after ``grace``)."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(5)


def wait_ready(
    process: subprocess.Popen[bytes],
    url: str,
    ready: Callable[[requests.Response], bool],
    log: Path,
    timeout: float = 30.0,
) -> None:
    """Poll ``url`` until ``ready(response)``, failing early if the server exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: server exited with {process.returncode}: {_tail(log)}")
        try:
            with requests.get(url, timeout=1, stream=True) as response:
                if ready(response):
                    return
        except requests.RequestException:
            pass
        time.sleep(0.05)  # the poll interval of a readiness check
    raise RuntimeError(f"{url}: server not ready within {timeout}s: {_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


@contextmanager
def soketi_server() -> Iterator[Soketi]:
    configured = os.environ.get("RELAYLINE_TEST_PUSHER_URL")
    if configured:
        match = _URL.fullmatch(configured)
        if match is None:
            raise ValueError(
                "RELAYLINE_TEST_PUSHER_URL must look like http://key:secret@host:port/apps/id"
            )
        yield Soketi(
            match["host"], int(match["port"]), match["app_id"], match["key"], match["secret"]
        )
        return
    ensure_node_modules(SOKETI_DIR)
    server = Soketi("127.0.0.1", free_port(), "1001", "app-key", "app-secret")
    # Nothing from the caller's SOKETI_* variables: only the settings below apply.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOKETI_")}
    env |= {
        "SOKETI_HOST": "127.0.0.1",
        "SOKETI_PORT": str(server.port),
        "SOKETI_DEFAULT_APP_ID": server.app_id,
        "SOKETI_DEFAULT_APP_KEY": server.key,
        "SOKETI_DEFAULT_APP_SECRET": server.secret,
        "SOKETI_METRICS_ENABLED": "false",
        "SOKETI_METRICS_HOST": "127.0.0.1",
        "SOKETI_METRICS_SERVER_PORT": str(free_port()),
        "SOKETI_CLUSTER_HOST": "127.0.0.1",
        "SOKETI_CLUSTER_UNICAST_ADDRESSES": "127.0.0.1",
        "SOKETI_CLUSTER_PORT": str(free_port(socket.SOCK_DGRAM)),
        "SOKETI_EVENT_MAX_SIZE_IN_KB": "10",
    }
    with tempfile.TemporaryDirectory(prefix="soketi-") as folder:
        log = Path(folder) / "soketi.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                ["node", "node_modules/@soketi/soketi/bin/server.js", "start"],
                cwd=SOKETI_DIR,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{server.port}/ready"
            wait_ready(process, url, lambda r: r.status_code == 200 and r.text == "OK", log)
            yield server
        finally:
            stop(process)
