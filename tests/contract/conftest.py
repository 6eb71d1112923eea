"""The contract suites: real frontend clients (Node packages) run against the running
stack, with the helpers of tests.support.node_suites."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.node_suites import require_executable


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` executable, version 20 or newer."""
    path = require_executable("node")
    version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    match = re.match(r"v(\d+)\.", version.stdout.strip())
    if match is None or int(match.group(1)) < 20:
        pytest.fail(f"Node.js 20+ is required, found {version.stdout.strip()!r}.", pytrace=False)
    return path
