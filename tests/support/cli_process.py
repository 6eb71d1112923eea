"""The ``relayline`` command as an operator runs it: a process group of its own (a
terminal's Ctrl-C reaches the whole group: ``interrupt``), its output collected line by
line as it comes, so a test can wait for a line and see what came before it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.orphan_guard import guarded
from tests.support.stack import ROOT


class CliProcess:
    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        command = [sys.executable, "-m", "relayline.cli", *args]
        self.process = subprocess.Popen(
            guarded(command),
            cwd=cwd,
            env={**env, "PYTHONPATH": str(ROOT)},  # tests.support, from any directory
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own group, as a shell's foreground job
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        """The first line matching ``pattern``, waiting for it up to ``timeout``."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if (match := compiled.search(line)) is not None:
                        return match
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (not self._reader.is_alive() and seen == len(self.lines)):
                    raise AssertionError(f"no line matches {pattern!r}:\n{self.output[-4000:]}")
                self._changed.wait(min(left, 1.0))

    def wait(self, timeout: float = 60.0) -> int:
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return status

    def interrupt(self) -> None:
        """Ctrl-C in a terminal: SIGINT to every process of the foreground group."""
        os.killpg(self.process.pid, signal.SIGINT)

    def stop(self) -> None:
        """Whatever is still running when a test ends, by its group."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
