"""CopilotKit against ``POST /agui`` of the running stack: a CopilotKit v2 runtime (the
Node bridge ``tests/contract/copilotkit/bridge.mjs``, an AG-UI ``HttpAgent`` pointed at
``/agui``) and CopilotKit's headless client (``@copilotkit/core``) as the page. The
scenarios (reference catalogue J 187) live in ``tests/contract/copilotkit/*.test.mjs``;
each test file starts its own bridge, because the runtime keeps threads in its process
memory. ``connect.test.mjs`` rejoins a running answer (issue 10): an ``@ag-ui/client``
``RelaylineAgent``'s ``connectAgent()`` on ``POST /agui/connect``, and a CopilotKit page
reloaded mid-run onto a fresh bridge whose runner's ``connect`` asks relayline. This
module starts the stack once (real Celery worker, the web app on a real port, Redis,
SQLite), hands the suite its base URL and the directory where the test
agent (``tests/contract/copilotkit_agent.py``) logs model calls and backend tool
executions, and requires every Node test to pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.node_suites import install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import fresh_env, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.contract]

COPILOTKIT_DIR = Path(__file__).parent / "copilotkit"
#: seconds the whole Node suite may take (it runs on a loaded 2-core machine at times)
SUITE_TIMEOUT = 600.0
#: CopilotKit phones home unless told not to; the runtime and the page both read these
NO_TELEMETRY = {"COPILOTKIT_TELEMETRY_DISABLED": "true", "DO_NOT_TRACK": "1"}


@pytest.fixture(scope="module")
def copilotkit_packages(node: str) -> Path:
    install_node_packages(COPILOTKIT_DIR)
    return COPILOTKIT_DIR


@pytest.fixture(scope="module")
def copilotkit_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[tuple[str, Path]]:
    """The stack's base URL and the directory of the test agent's logs."""
    counts = tmp_path_factory.mktemp("copilotkit-contract")
    with redis_databases.database("CopilotKit contract stack") as redis_url:
        env = fresh_env(
            counts,
            redis_url,
            RELAYLINE_AGENT="tests.contract.copilotkit_agent:copilotkit_spec",
        )
        with running_stack(env, workers=1) as (web, _workers):
            yield web.url, counts


@pytest.mark.timeout(SUITE_TIMEOUT + 120)
def test_copilotkit_runtime_bridge_passes_the_contract_suite(
    node: str, copilotkit_packages: Path, copilotkit_stack: tuple[str, Path]
) -> None:
    base_url, counts = copilotkit_stack
    files = sorted(copilotkit_packages.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {copilotkit_packages}"
    done, summary = run_node_tests(
        node,
        copilotkit_packages,
        files,
        env={"RELAYLINE_BASE_URL": base_url, "RELAYLINE_TEST_COUNTS": str(counts), **NO_TELEMETRY},
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
    # What the stop tests measured (their TAP diagnostics; `pytest -rP` shows them).
    for line in re.findall(r"^\s*# (measured: .*)$", done.stdout, flags=re.MULTILINE):
        print(line)
