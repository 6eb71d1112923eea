"""``st run`` as a child process over a running stack's description, with the hooks of
tests/support/schemathesis_hooks.py (the refused-changes-nothing check)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.stack import ROOT


def run_schemathesis(
    url: str,
    database: Path,
    checks: Sequence[str],
    *,
    max_examples: int,
    request_timeout: float,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{url}/openapi.json",
        "--checks",
        ",".join(checks),
        "--max-examples",
        str(max_examples),
        # the same requests every run (schemathesis then uses no seed)
        "--generation-deterministic",
        "--request-timeout",
        str(request_timeout),
        "--workers",
        "1",
        "--no-color",
        "--suppress-health-check",
        "all",
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks",
        "RELAYLINE_TEST_SCHEMATHESIS_DB": str(database),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
