"""assistant-ui (``@assistant-ui/react`` with its AI SDK runtime,
``@assistant-ui/react-ai-sdk``) in headless Chromium against ``POST /api/chat`` of the
running stack: a real Celery worker, the web app on a real port, Redis and a SQLite
database. The page (``tests/contract/assistant-ui/src``, built with Vite) uses the
recipes docs/clients.md gives for assistant-ui (history from ``GET /api/chat/<id>``, a Stop
that stops the run, ``?onDisconnect=cancel`` for a page that cannot resume) and is served
on the web app's own origin; a second page (``agui.html``) runs assistant-ui's AG-UI
runtime with the history adapter of docs/clients.md. The scenarios live in the Node suite
``tests/contract/assistant-ui/*.test.mjs``, driven by playwright-core; this module
installs and builds the page, starts the stack once (the Vercel suite's scripted agent,
tests/contract/vercel_agent.py) and requires every Node test to pass.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.contract_pages import (
    BUILD_TIMEOUT,
    CHROMIUM,
    PAGE_PATH,
    build_page,
    require_chromium,
    web_with_page,
)
from tests.support.node_suites import NPM_CI_TIMEOUT, install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env

pytestmark = [pytest.mark.integration, pytest.mark.contract]

PAGE_DIR = Path(__file__).parent / "assistant-ui"
#: seconds the whole Node suite may take (the CPU is loaded at times)
SUITE_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class ContractStack:
    base_url: str
    page_url: str
    counts: Path


@pytest.fixture(scope="module")
def assistant_ui_page(node: str) -> Path:
    require_chromium("assistant-ui")
    install_node_packages(PAGE_DIR)
    return build_page(node, PAGE_DIR)


@pytest.fixture(scope="module")
def contract_stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    assistant_ui_page: Path,
) -> Iterator[ContractStack]:
    counts = tmp_path_factory.mktemp("assistant-ui-contract")
    with redis_databases.database("assistant-ui contract stack") as redis_url:
        env = fresh_env(
            counts, redis_url, RELAYLINE_AGENT="tests.contract.vercel_agent:vercel_spec"
        )
        worker = Worker(env, "aui-w0")
        try:
            with web_with_page(env, assistant_ui_page) as base_url:
                yield ContractStack(base_url, f"{base_url}{PAGE_PATH}/index.html", counts)
        finally:
            worker.stop()


@pytest.mark.timeout(NPM_CI_TIMEOUT + BUILD_TIMEOUT + SUITE_TIMEOUT + 120)
def test_assistant_ui_in_chromium_passes_the_contract_suite(
    node: str, contract_stack: ContractStack
) -> None:
    files = sorted(PAGE_DIR.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {PAGE_DIR}"
    done, summary = run_node_tests(
        node,
        PAGE_DIR,
        files,
        env={
            "RELAYLINE_BASE_URL": contract_stack.base_url,
            "RELAYLINE_PAGE_URL": contract_stack.page_url,
            "RELAYLINE_TEST_COUNTS": str(contract_stack.counts),
            "RELAYLINE_CHROMIUM": str(CHROMIUM),
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
    for line in re.findall(r"^\s*# (measured: .*)$", done.stdout, flags=re.MULTILINE):
        print(line)
