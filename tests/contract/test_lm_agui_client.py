"""``@cyronius/lm-ag-ui`` 1.x (its framework-free ``AgentClient`` and config loader)
against ``POST /agent/<agentId>`` and ``GET /agent/<agentId>`` of the running stack: a
real Celery worker process, the web app on a real port, Redis and a SQLite database.

The scenarios live in the Node suite ``tests/contract/lm-agui/*.test.mjs``; this module
starts the stack once with the named agent ``lm`` (:mod:`tests.contract.lm_agui_agent`),
hands the suite the base URL, the agent id and the directory where the agent logs model
calls and backend tool executions, and requires every Node test to pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.node_suites import install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import fresh_env, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.contract]

LM_AGUI_DIR = Path(__file__).parent / "lm-agui"
#: the named agent the suite talks to
AGENT_ID = "lm"
#: seconds the whole Node suite may take (the machine is sometimes loaded)
SUITE_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class LmStack:
    base_url: str
    counts: Path


@pytest.fixture(scope="module")
def lm_agui_packages(node: str) -> Path:
    install_node_packages(LM_AGUI_DIR)
    return LM_AGUI_DIR


@pytest.fixture(scope="module")
def lm_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[LmStack]:
    counts = tmp_path_factory.mktemp("lm-agui-contract")
    with redis_databases.database("lm-ag-ui contract stack") as redis_url:
        env = fresh_env(
            counts,
            redis_url,
            RELAYLINE_AGENTS=f"{AGENT_ID}=tests.contract.lm_agui_agent:lm_spec",
        )
        with running_stack(env, workers=1) as (web, _workers):
            yield LmStack(web.url, counts)


@pytest.mark.timeout(SUITE_TIMEOUT + 120)
def test_lm_agui_client_passes_the_contract_suite(
    node: str, lm_agui_packages: Path, lm_stack: LmStack
) -> None:
    files = sorted(lm_agui_packages.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {lm_agui_packages}"
    done, summary = run_node_tests(
        node,
        lm_agui_packages,
        files,
        env={
            "RELAYLINE_BASE_URL": lm_stack.base_url,
            "RELAYLINE_AGENT_ID": AGENT_ID,
            "RELAYLINE_TEST_COUNTS": str(lm_stack.counts),
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
