"""Several "hosts" on one machine, for tests of what crosses a network: each host is a
Linux network namespace with its own address on one bridge, and each process started
on it runs in UTS and PID namespaces of its own (its own hostname; pids that collide
with other hosts' pids, as on real machines). The bridge lives in a namespace of its
own; the test process reaches the hosts through one veth pair into it.

A partition is a host's link cut at the bridge (``cut``/``restore``): the host and its
processes live on, nothing reaches them and nothing of theirs gets out, as when a cable
or a switch port fails. This machine's kernel has neither netem nor iptables, so delay
and loss are not injected here.

Needs root (namespaces, veth, bridge): ``available()`` says why not where it cannot run.
Everything made here is named ``rl<tag>-...`` and removed on ``close``; processes are
stopped by PID.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from tests.support.orphan_guard import guarded


def available() -> str | None:
    """None when hosts can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2, util-linux)"
    probe = f"rlprobe{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add is not permitted here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.254.0.0/16 that no interface of this machine is on."""
    used = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    while True:
        net = ipaddress.IPv4Network(f"10.254.{random.randrange(1, 250)}.0/24")
        if str(net.network_address)[:-1] not in used:
            return net


@dataclasses.dataclass
class Host:
    name: str
    namespace: str
    address: str
    #: the veth end on the bridge: down is a cut link
    port: str


class HostProcess:
    """A process on a host, in its own UTS and PID namespaces, with ``hostname`` as its
    hostname. Output goes to ``log``."""

    def __init__(
        self, host: Host, argv: Sequence[str], env: dict[str, str], log: Path, hostname: str
    ) -> None:
        self.host = host
        self.log = log
        self._handle: IO[str] = log.open("w")
        # unshare's child is pid 1 of the new PID namespace; --kill-child ties it to
        # unshare, which the orphan guard ties to this test process.
        command = [
            "ip",
            "netns",
            "exec",
            host.namespace,
            "unshare",
            "--uts",
            "--pid",
            "--fork",
            "--kill-child",
            "sh",
            "-c",
            'hostname "$0" && exec "$@"',
            hostname,
            *argv,
        ]
        self.process = subprocess.Popen(
            guarded(command),
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=self._handle,
            stderr=subprocess.STDOUT,
        )

    def wait_for_log(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.log.name} exited: {self.log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{text!r} not in {self.log.name} after {timeout} s")
            time.sleep(0.1)  # polling a log file, bounded by the deadline

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._handle.close()


class Hosts:
    """Hosts on one bridge; this process reaches them at their addresses."""

    def __init__(self, names: Sequence[str]) -> None:
        self.tag = uuid.uuid4().hex[:5]
        self.subnet = _free_subnet()
        addresses = [str(a) for a in self.subnet.hosts()]
        self.switch = f"rl{self.tag}-sw"
        self.hosts: dict[str, Host] = {}
        self.processes: list[HostProcess] = []
        self._root_link = f"rl{self.tag}-t"
        _ip("netns", "add", self.switch)
        try:
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "dev", "br0", "up")
            # The test process's own way in (address .1).
            self._attach(self._root_link, None, f"{addresses[0]}/24", "port-t")
            for index, name in enumerate(names, start=1):
                namespace = f"rl{self.tag}-{name}"
                _ip("netns", "add", namespace)
                port = f"port-{index}"
                address = addresses[index]
                self._attach(f"rl{self.tag}-{index}", namespace, f"{address}/24", port)
                _ip("-n", namespace, "link", "set", "dev", "lo", "up")
                self.hosts[name] = Host(name, namespace, address, port)
        except BaseException:
            self.close()
            raise

    def _attach(self, link: str, namespace: str | None, cidr: str, port: str) -> None:
        """A veth pair: ``link`` (moved into ``namespace``, None: stays here, with
        ``cidr``) and ``port`` on the bridge."""
        _ip("link", "add", link, "type", "veth", "peer", "name", port, "netns", self.switch)
        if namespace is not None:
            _ip("link", "set", "dev", link, "netns", namespace)
            _ip("-n", namespace, "link", "set", "dev", link, "name", "eth0")
            _ip("-n", namespace, "addr", "add", cidr, "dev", "eth0")
            _ip("-n", namespace, "link", "set", "dev", "eth0", "up")
        else:
            _ip("addr", "add", cidr, "dev", link)
            _ip("link", "set", "dev", link, "up")
        _ip("-n", self.switch, "link", "set", "dev", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", "dev", port, "up")

    def start(
        self,
        host: str,
        argv: Sequence[str],
        env: dict[str, str],
        log: Path,
        hostname: str | None = None,
    ) -> HostProcess:
        process = HostProcess(self.hosts[host], argv, env, log, hostname or host)
        self.processes.append(process)
        return process

    def run(self, host: str, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        """Run a command on ``host`` to its end (its output returned)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.hosts[host].namespace, *argv],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )

    def cut(self, host: str) -> None:
        """Pull the host's cable: its link goes down at the bridge."""
        _ip("-n", self.switch, "link", "set", "dev", self.hosts[host].port, "down")

    def restore(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", "dev", self.hosts[host].port, "up")

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", self._root_link], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True)


@contextmanager
def hosts(names: Sequence[str]) -> Iterator[Hosts]:
    made = Hosts(names)
    try:
        yield made
    finally:
        made.close()


_NO_DISK = ("--save", "", "--appendonly", "no")


@contextmanager
def redis_on(cluster: Hosts, host: str, log_dir: Path) -> Iterator[str]:
    """A Redis server of this test's own on ``host`` (its own namespace: port 6379 there
    is nobody else's); yields its URL."""
    binary = shutil.which("redis-server") or shutil.which("valkey-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed")
    address = cluster.hosts[host].address
    server = cluster.start(
        host,
        # Its own namespace: only the tests reach it, so no protected mode.
        [binary, "--bind", address, "--port", "6379", "--protected-mode", "no", *_NO_DISK],
        dict(os.environ),
        log_dir / "redis.log",
    )
    server.wait_for_log("Ready to accept connections")
    yield f"redis://{address}:6379"


@contextmanager
def postgres_on(cluster: Hosts, host: str, log_dir: Path) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on ``host`` (initdb, stopped at the end); yields a
    SQLAlchemy URL of its ``postgres`` database."""
    bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not bindirs:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    bindir = bindirs[-1]
    workdir = Path(tempfile.gettempdir()) / f"relayline-hosts-pg-{uuid.uuid4().hex[:8]}"
    workdir.mkdir()
    shutil.chown(workdir, "postgres")
    data = workdir / "data"
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*as_postgres, f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    with (data / "pg_hba.conf").open("a") as hba:  # the hosts' subnet, no password
        hba.write(f"host all all {cluster.subnet} trust\n")
    address = cluster.hosts[host].address
    options = f"-p 5432 -k {workdir} -c listen_addresses={address}"
    log = workdir / "log"  # the postgres user's to write, unlike the test's folders
    start = [f"{bindir}/pg_ctl", "-D", str(data), "-o", options, "-l", str(log)]
    try:
        cluster.run(host, [*as_postgres, *start, "-w", "start"])
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"PostgreSQL did not start: {log.read_text()[-2000:]}") from exc
    try:
        yield f"postgresql+psycopg://postgres@{address}:5432/postgres"
    finally:
        stop = [f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"]
        subprocess.run(
            ["ip", "netns", "exec", cluster.hosts[host].namespace, *as_postgres, *stop],
            capture_output=True,
        )
        shutil.copy(log, log_dir / "postgres.log")
        shutil.rmtree(workdir, ignore_errors=True)


def python(*args: str) -> list[str]:
    """A command line running this interpreter."""
    return [sys.executable, *args]
