"""``useChat`` from ``@ai-sdk/react`` (``ai`` 7) in headless Chromium against ``POST
/api/chat`` of the running stack: a real Celery worker, the web app on a real port,
Redis and a SQLite database. The page (``tests/contract/vercel/src``, built with Vite)
is served by the web app's own server, mounted beside the app by a WSGI middleware, so
it talks to ``/api/chat`` on its own origin exactly as a deployed frontend would. The
scenarios (reference catalogue J 183-186) live in the Node suite
``tests/contract/vercel/*.test.mjs``, driven by playwright-core; this module installs
and builds the page, starts the stack once and requires every Node test to pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.contract_pages import (
    BUILD_TIMEOUT,
    ContractStack,
    build_page,
    page_stack,
    pass_page_suite,
    require_chromium,
)
from tests.support.node_suites import NPM_CI_TIMEOUT, install_node_packages
from tests.support.redis_server import RedisDatabases

pytestmark = [pytest.mark.integration, pytest.mark.contract]

VERCEL_DIR = Path(__file__).parent / "vercel"
#: seconds the whole Node suite may take (the CPU is loaded at times)
SUITE_TIMEOUT = 780.0


@pytest.fixture(scope="module")
def vercel_page(node: str) -> Path:
    require_chromium("Vercel")
    install_node_packages(VERCEL_DIR)
    return build_page(node, VERCEL_DIR)


@pytest.fixture(scope="module")
def contract_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases, vercel_page: Path
) -> Iterator[ContractStack]:
    counts = tmp_path_factory.mktemp("vercel-contract")
    agent = "tests.contract.vercel_agent:vercel_spec"
    with page_stack(counts, redis_databases, vercel_page, "vercel", agent) as stack:
        yield stack


@pytest.mark.timeout(NPM_CI_TIMEOUT + BUILD_TIMEOUT + SUITE_TIMEOUT + 120)
def test_use_chat_in_chromium_passes_the_contract_suite(
    node: str, contract_stack: ContractStack
) -> None:
    pass_page_suite(node, VERCEL_DIR, contract_stack, SUITE_TIMEOUT)
