"""A throwaway PostgreSQL cluster that a test starts, restarts and stops itself (by
``pg_ctl`` on its own data directory), never the machine's shared server."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.postgres import _as_postgres, _free_port


class PgCluster:
    def __init__(self) -> None:
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not binaries:
            raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql.")
        self.bindir = binaries[-1]
        self.workdir = tempfile.mkdtemp(prefix="relayline-pg-restart-")
        if os.geteuid() == 0:
            shutil.chown(self.workdir, "postgres")
        self.datadir = os.path.join(self.workdir, "data")
        self.port = _free_port()
        self._pg(["initdb", "-D", self.datadir, "-A", "trust", "-U", "postgres"])

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, args: list[str]) -> None:
        command = [f"{self.bindir}/{args[0]}", *args[1:]]
        subprocess.run(_as_postgres(command), check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1"
        log = os.path.join(self.workdir, "log")
        self._pg(["pg_ctl", "-D", self.datadir, "-o", options, "-l", log, "-w", "start"])

    def stop(self) -> None:
        # fast: every client connection is closed, as a crash or a failover would
        self._pg(["pg_ctl", "-D", self.datadir, "-m", "fast", "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def pg_cluster() -> Iterator[PgCluster]:
    cluster = PgCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            cluster.stop()
        shutil.rmtree(cluster.workdir, ignore_errors=True)
