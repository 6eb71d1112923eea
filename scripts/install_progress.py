"""Run ``pip install`` and show that it is working: one short line per package pip
collects or installs, and a "still installing" line whenever pip has said nothing for
HEARTBEAT seconds (pip's own output is either a wall of text or, with --quiet, a minute
of silence). pip's full output goes to LOG; a failure prints its last lines.

Usage: python scripts/install_progress.py LOG -- <pip install arguments>"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

#: seconds of silence after which a line says pip is still busy
HEARTBEAT = 4.0
#: pip's lines worth showing: what it fetches and what it installs
SHOWN = (
    "Collecting ",
    "Processing ",
    "Installing collected packages",
    "Successfully installed",
    "ERROR",
)
#: lines of pip's output a failure shows
TAIL = 30


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    log_path, pip_args = Path(argv[0]), argv[2:]
    started = time.monotonic()
    last_output = [started]
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(0.5):
            now = time.monotonic()
            if now - last_output[0] >= HEARTBEAT:
                print(f"   ... still installing ({now - started:.0f} s)", flush=True)
                last_output[0] = now

    command = [sys.executable, "-m", "pip", "install", "--progress-bar", "off", *pip_args]
    tail: deque[str] = deque(maxlen=TAIL)
    collected = 0
    threading.Thread(target=heartbeat, daemon=True).start()
    with (
        log_path.open("w") as log,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        ) as pip,
    ):
        assert pip.stdout is not None
        for line in pip.stdout:
            log.write(line)
            tail.append(line.rstrip())
            if not line.startswith(SHOWN):
                continue
            if line.startswith(("Collecting ", "Processing ")):
                collected += 1
                line = f"[{collected}] {line}"
            elif line.startswith("Installing collected packages") and collected:
                line = f"Installing {collected} packages (the longest step)\n"
            print(f"   {line.rstrip()[:100]}", flush=True)
            last_output[0] = time.monotonic()
        status = pip.wait()
    done.set()
    if status != 0:
        print("\n".join(tail), file=sys.stderr)
        print(f"pip failed (exit {status}); its full output is in {log_path}", file=sys.stderr)
        return status
    print(f"   installed in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
