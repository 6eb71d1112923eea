"""Run a command that dies with the test process: ``python -m tests.support.orphan_guard
<pid> <command...>`` asks Linux to SIGKILL it when its parent exits (PR_SET_PDEATHSIG,
kept across exec), then becomes the command.

Why: a test process killed by a timeout used to leave its Celery workers running; they
went on taking tasks from Redis databases that later tests were handed, and those tests
then failed for no reason of their own.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1


def guarded(command: list[str]) -> list[str]:
    """``command`` wrapped so that it is killed when this process exits. Only from the
    main thread: Linux sends the signal when the *thread* that started the child ends,
    so a worker started by a request handler (a restart endpoint) would die with it."""
    if threading.current_thread() is not threading.main_thread():
        return command
    return [sys.executable, "-m", "tests.support.orphan_guard", str(os.getpid()), *command]


def main() -> None:
    parent, command = int(sys.argv[1]), sys.argv[2:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent went before the request took hold
            sys.exit(1)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
