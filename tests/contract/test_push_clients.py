"""Push delivery seen by real clients (issue 6 item 4).

The Node suite ``tests/contract/push`` subscribes as a browser does (pusher-js on
``private-thread-<id>`` and ``private-encrypted-thread-<id>`` authorized by
``/pusher/auth``; an ``EventSource`` on the Mercure hub with the token of
``/mercure/token``), reassembles what arrives with ``web/static/relayline-consumer.js``
and feeds the protocol stream to the official ``@ag-ui/client`` and ``ai`` clients;
``recovery.test.mjs`` drops Pusher events on the client side and requires the consumer
to recover them from the segment's log. The
agent (:mod:`tests.contract.push_agent`) answers with about 30 kB of mixed-script
Unicode, so every text event is fragmented on the way.

On the session's real soketi and real Mercure hub, this module starts one stack at a
time (plain Pusher and Mercure; then Pusher with an encryption master key, where the
channel is ``private-encrypted-``), and requires every Node test to pass.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from pathlib import Path

import pytest

from tests.contract.push_agent import LONG_ANSWER
from tests.support.mercure_hub import MercureHub
from tests.support.node_suites import install_node_packages, run_node_tests
from tests.support.push_stack import push_stack
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import Soketi

pytestmark = [pytest.mark.integration, pytest.mark.contract]

PUSH_DIR = Path(__file__).parent / "push"
#: seconds one run of the Node suite may take
SUITE_TIMEOUT = 600.0
AGENT = "tests.contract.push_agent:push_spec"


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One stack configuration and the deliveries the Node suite tests on it."""

    deliveries: tuple[str, ...]
    encrypted: bool


SCENARIOS = [
    pytest.param(Scenario(("pusher", "mercure"), encrypted=False), id="private-and-mercure"),
    pytest.param(Scenario(("pusher-encrypted",), encrypted=True), id="private-encrypted"),
]
#: Node tests per delivery: one AG-UI turn, one Vercel turn
TESTS_PER_DELIVERY = 2
#: and per Pusher delivery (recovery.test.mjs): dropped events, a late start, a gap
RECOVERY_TESTS = 3


@pytest.fixture(scope="module")
def push_packages(node: str) -> Path:
    install_node_packages(PUSH_DIR)
    return PUSH_DIR


@pytest.fixture(scope="module")
def answer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("push-answer") / "answer.txt"
    path.write_bytes(LONG_ANSWER.encode("utf-8"))  # bytes: no newline translation
    return path


@pytest.mark.timeout(SUITE_TIMEOUT + 180)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_official_clients_read_pushed_turns(
    scenario: Scenario,
    node: str,
    push_packages: Path,
    soketi: Soketi,
    hub: MercureHub,
    answer_file: Path,
    redis_databases: RedisDatabases,
    tmp_path: Path,
) -> None:
    master_key = base64.b64encode(os.urandom(32)).decode() if scenario.encrypted else None
    with push_stack(
        tmp_path,
        redis_databases,
        soketi=soketi,
        hub=None if scenario.encrypted else hub,
        master_key=master_key,
        RELAYLINE_AGENT=AGENT,
    ) as stack:
        done, summary = run_node_tests(
            node,
            push_packages,
            sorted(push_packages.glob("*.test.mjs")),
            env={
                "RELAYLINE_BASE_URL": stack.web.url,
                "RELAYLINE_PUSH_DELIVERIES": ",".join(scenario.deliveries),
                "RELAYLINE_PUSHER": json.dumps(
                    {"key": soketi.key, "host": soketi.host, "port": soketi.port}
                ),
                "RELAYLINE_MERCURE_PUBLISHER_KEY": hub.publisher_key,
                "RELAYLINE_PUSH_ANSWER_FILE": str(answer_file),
            },
            timeout=SUITE_TIMEOUT,
        )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.skipped == 0 and summary.todo == 0, report
    pushers = sum(delivery.startswith("pusher") for delivery in scenario.deliveries)
    expected = TESTS_PER_DELIVERY * len(scenario.deliveries) + RECOVERY_TESTS * pushers
    assert summary.passed == summary.tests == expected, report
