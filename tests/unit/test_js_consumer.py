"""The browser push consumer's own suite (node:test), run as part of the pytest command.

``web/static/relayline-consumer.js`` is JavaScript, so its behaviour tests are
``tests/node/consumer/*.test.mjs``; this wrapper makes the project's single test
command cover them. A missing ``node`` fails the test: the consumer ships with every
push deployment, so its suite must not silently disappear.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "node" / "consumer"
# Node loads the consumer (a typeless .js file with `export`) as ESM by syntax
# detection, which every Node from 20.19 on does.
MIN_NODE = (20, 19)


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (>= 20.19) is required to test web/static/relayline-consumer.js")
    return node


def _version(node: str) -> tuple[int, int]:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.match(r"v(\d+)\.(\d+)", out.strip())
    assert found, f"unexpected `node --version` output: {out!r}"
    return int(found[1]), int(found[2])


def test_node_consumer_suite_passes() -> None:
    node = _node()
    version = _version(node)
    assert version >= MIN_NODE, f"node {version} is too old; need >= {MIN_NODE}"
    files = sorted(SUITE.glob("*.test.mjs"))
    assert files, f"no *.test.mjs files in {SUITE}"
    # Node 20 searches a directory argument; Node 21+ treats it as a glob and fails
    # (nodejs/node#64555), so newer versions get the files themselves.
    targets = [str(SUITE.relative_to(ROOT))] if version[0] == 20 else [str(f) for f in files]
    result = subprocess.run(
        [node, "--test", "--test-reporter=tap", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    report = result.stdout + result.stderr
    counts = dict(re.findall(r"^# (pass|fail|cancelled|tests) (\d+)$", result.stdout, re.M))
    assert result.returncode == 0, report[-6000:]
    assert int(counts.get("pass", 0)) > 0, f"no tests ran:\n{report[-3000:]}"
    assert counts.get("fail") == "0" and counts.get("cancelled") == "0", report[-6000:]
