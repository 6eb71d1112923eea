"""The official ``@ag-ui/client`` (1.0.0) ``HttpAgent`` against ``POST /agui`` of the
running stack: real Celery worker processes, the web app on a real port, Redis and a
SQLite database. The scenarios (reference catalogue J 161-182) live in the Node suite
``tests/contract/agui/*.test.mjs``; this module starts the stack once, hands the suite
its base URL, the directory where the test agent logs model calls and backend tool
executions, and a local control endpoint to restart the worker, then requires every
Node test to pass.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.node_suites import install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.contract]

AGUI_DIR = Path(__file__).parent / "agui"
#: seconds the whole Node suite may take (it runs on a loaded 2-core machine at times)
SUITE_TIMEOUT = 780.0


@dataclasses.dataclass(frozen=True)
class ContractStack:
    base_url: str
    counts: Path
    control_url: str


class WorkerControl:
    """Restarts the stack's Celery worker on request: the old process stops (warm
    shutdown, nothing is in flight between two requests) and a fresh one starts."""

    def __init__(self, env: dict[str, str], workers: list[Worker]) -> None:
        self.env = env
        self.workers = workers  # running_stack stops whatever this list holds at the end
        self.restarts = 0
        self.lock = threading.Lock()

    def restart(self) -> dict[str, int | str]:
        with self.lock:
            old = self.workers[0]
            before = old.process.pid
            old.stop()
            self.restarts += 1
            fresh = Worker(self.env, f"contract-restart{self.restarts}")
            self.workers[0] = fresh
            return {"before": before, "after": fresh.process.pid, "log": str(fresh.log)}


@contextmanager
def control_server(control: WorkerControl) -> Iterator[str]:
    """``POST /restart-worker`` on 127.0.0.1 only: answers ``{"before": pid, "after": pid,
    "log": <the new worker's log file>}``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/restart-worker":
                self.send_error(404)
                return
            try:
                body = json.dumps(control.restart()).encode()
                status = 200
            except Exception as exc:  # reported to the Node test that asked
                body = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
                status = 500
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep the test output to the Node report

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture(scope="module")
def agui_packages(node: str) -> Path:
    install_node_packages(AGUI_DIR)
    return AGUI_DIR


@pytest.fixture(scope="module")
def contract_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[ContractStack]:
    counts = tmp_path_factory.mktemp("agui-contract")
    with redis_databases.database("AG-UI contract stack") as redis_url:
        yield from _contract_stack(counts, redis_url)


def _contract_stack(counts: Path, redis_url: str) -> Iterator[ContractStack]:
    env = fresh_env(
        counts,
        redis_url,
        RELAYLINE_AGENT="tests.support.agents_contract:contract_spec",
        RELAYLINE_AGENTS="broken=tests.support.agents_contract:broken_spec",
    )
    with (
        running_stack(env, workers=1) as (web, workers),
        control_server(WorkerControl(env, workers)) as control_url,
    ):
        yield ContractStack(web.url, counts, control_url)


@pytest.mark.timeout(SUITE_TIMEOUT + 120)
def test_official_agui_client_passes_the_contract_suite(
    node: str, agui_packages: Path, contract_stack: ContractStack
) -> None:
    files = sorted(agui_packages.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {agui_packages}"
    done, summary = run_node_tests(
        node,
        agui_packages,
        files,
        env={
            "RELAYLINE_BASE_URL": contract_stack.base_url,
            "RELAYLINE_TEST_COUNTS": str(contract_stack.counts),
            "RELAYLINE_CONTROL_URL": contract_stack.control_url,
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
