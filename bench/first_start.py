"""The first hour's first minute (issue 32): a fresh clone to a healthy ``scripts/run``,
then a second start, each timed to the "relayline is up" line (printed once /healthz
answers), with the longest silence in between and the tracebacks Ctrl-C printed.

Runs with any Python 3.11 (nothing of relayline's is imported: the clone has no .venv yet):
    python3 bench/first_start.py            # clones this repository's HEAD into a temp dir
    python3 bench/first_start.py --keep DIR # clones into DIR and keeps it
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what the clone's start must not inherit: it runs with embedded defaults
SERVICE_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL", "DATABASE_URL", "VIRTUAL_ENV")


@dataclass(frozen=True)
class Start:
    seconds: float
    longest_silence: float
    silent_after: str
    tracebacks: int
    stop_status: int


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(clone: Path) -> Start:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}  # noqa: TID251
    began = last = time.monotonic()
    longest, silent_after, previous = 0.0, "", ""
    run = subprocess.Popen(
        ["scripts/run", "--port", str(free_port())],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # Ctrl-C below reaches its whole group, as a terminal's
    )
    assert run.stdout is not None
    for line in run.stdout:
        now = time.monotonic()
        if now - last > longest:
            longest, silent_after = now - last, previous
        last, previous = now, line.strip()[:80]
        if "relayline is up" in line:
            break
    else:
        raise RuntimeError(f"scripts/run exited with {run.wait()} before it was up")
    seconds = time.monotonic() - began
    os.killpg(run.pid, signal.SIGINT)
    rest = run.stdout.read()
    return Start(seconds, longest, silent_after, rest.count("Traceback"), run.wait())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="clone into this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clone = args.keep or Path(tmp) / "relayline"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        print(f"load average {os.getloadavg()[0]:.1f}")
        for name in ("fresh clone", "second start"):
            result = start(clone)
            print(
                f"{name}: up after {result.seconds:.1f} s; longest silence "
                f"{result.longest_silence:.1f} s (after {result.silent_after!r}); Ctrl-C: "
                f"status {result.stop_status}, {result.tracebacks} tracebacks",
                flush=True,
            )


if __name__ == "__main__":
    main()
