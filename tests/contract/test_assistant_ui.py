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

PAGE_DIR = Path(__file__).parent / "assistant-ui"
#: seconds the whole Node suite may take (the CPU is loaded at times)
SUITE_TIMEOUT = 600.0


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
    agent = "tests.contract.vercel_agent:vercel_spec"
    with page_stack(counts, redis_databases, assistant_ui_page, "aui", agent) as stack:
        yield stack


@pytest.mark.timeout(NPM_CI_TIMEOUT + BUILD_TIMEOUT + SUITE_TIMEOUT + 120)
def test_assistant_ui_in_chromium_passes_the_contract_suite(
    node: str, contract_stack: ContractStack
) -> None:
    pass_page_suite(node, PAGE_DIR, contract_stack, SUITE_TIMEOUT)
