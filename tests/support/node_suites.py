"""Node test suites run from pytest (the contract suites: real frontend clients against
the running stack): ``npm ci`` of a suite's locked packages and ``node --test`` with its
TAP summary. Node is required: a missing ``node`` or ``npm`` fails the test with a clear
message, never skips it."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

#: seconds ``npm ci`` may take (the registry is reachable but may be slow)
NPM_CI_TIMEOUT = 300.0


def require_executable(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"'{name}' was not found on PATH: the contract suites run the official clients "
            "under Node.js 20+ (install nodejs and npm).",
            pytrace=False,
        )
    return found


def install_node_packages(directory: Path) -> None:
    """``npm ci`` in ``directory`` when its ``node_modules`` is missing: the lock file
    pins every version, so an existing tree is reused as it is."""
    if (directory / "node_modules").is_dir():
        return
    npm = require_executable("npm")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=NPM_CI_TIMEOUT,
    )
    if done.returncode != 0:
        pytest.fail(
            f"npm ci failed in {directory} (exit {done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}",
            pytrace=False,
        )


@dataclasses.dataclass(frozen=True)
class TapSummary:
    """The closing counters of ``node --test --test-reporter=tap``."""

    tests: int
    passed: int
    failed: int
    cancelled: int
    skipped: int
    todo: int

    @classmethod
    def parse(cls, output: str) -> TapSummary:
        def counter(name: str) -> int:
            found = re.findall(rf"^# {name} (\d+)$", output, flags=re.MULTILINE)
            if not found:
                raise AssertionError(f"no '# {name}' line in the TAP output:\n{output[-4000:]}")
            return int(found[-1])

        return cls(
            tests=counter("tests"),
            passed=counter("pass"),
            failed=counter("fail"),
            cancelled=counter("cancelled"),
            skipped=counter("skipped"),
            todo=counter("todo"),
        )


def run_node_tests(
    node_path: str,
    directory: Path,
    files: Sequence[Path],
    env: Mapping[str, str],
    timeout: float,
    per_test_timeout_ms: int = 120_000,
) -> tuple[subprocess.CompletedProcess[str], TapSummary]:
    """Run ``files`` with node's test runner, one file at a time (the files share one
    stack and some restart its worker), and return the process and its TAP summary."""
    try:
        done = subprocess.run(
            [
                node_path,
                "--test",
                "--test-reporter=tap",
                "--test-concurrency=1",
                f"--test-timeout={per_test_timeout_ms}",
                *(str(f.relative_to(directory)) for f in files),
            ],
            cwd=directory,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"the Node suite did not finish in {timeout:.0f}s; its output so far:\n"
            f"{_text(exc.stdout)[-20000:]}\n--- stderr ---\n{_text(exc.stderr)[-4000:]}",
            pytrace=False,
        )
    try:
        summary = TapSummary.parse(done.stdout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- stderr ---\n{done.stderr[-4000:]}") from None
    return done, summary


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""
