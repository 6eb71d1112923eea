"""schemathesis over every operation of ``GET /openapi.json``, against the running stack
(the web app and a real Celery worker, real Redis, a real database): no 5xx, every
answer's status, content type and body as described, schema-invalid requests refused,
and no refused request changes what is stored (tests/support/schemathesis_hooks.py).

Deterministic generation and a small budget per operation, so CI sends the same
requests each time, in about 40 s on the 2-core machine. Streams are the scripted
agent's short answers; ``--request-timeout`` bounds any that would not end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.redis_server import RedisDatabases
from tests.support.schemathesis_run import run_schemathesis
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration

#: examples per operation and phase (28 operations)
MAX_EXAMPLES = 12
#: a turn queued behind a suspended run (``?multitask=enqueue``) waits for it to end: its
#: relay gives up after this long with the protocol's STREAM_INTERRUPTED, as designed,
#: well inside the request timeout
SHORT_RELAY = {"RELAYLINE_RELAY_TIMEOUT": "3"}
#: the silence is noticed at a heartbeat: one a second
HEARTBEAT = {"RELAYLINE_HEARTBEAT_SECONDS": 1.0}
REQUEST_TIMEOUT = 20.0
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "refused_changes_nothing",
)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases
) -> Iterator[tuple[WebServer, Path]]:
    counts = tmp_path_factory.mktemp("schemathesis")
    with (
        redis_databases.database("schemathesis") as redis_url,
        running_stack(fresh_env(counts, redis_url, **SHORT_RELAY), test_config=HEARTBEAT) as (
            web,
            _workers,
        ),
    ):
        yield web, counts / "db.sqlite"


@pytest.mark.timeout(600)
def test_every_operation_conforms(stack: tuple[WebServer, Path], tmp_path: Path) -> None:
    web, database = stack
    assert requests.get(f"{web.url}/openapi.json", timeout=10).status_code == 200
    began = time.monotonic()
    run = run_schemathesis(
        web.url,
        database,
        CHECKS,
        max_examples=MAX_EXAMPLES,
        request_timeout=REQUEST_TIMEOUT,
        timeout=540,
    )
    elapsed = time.monotonic() - began
    print(f"schemathesis ran {elapsed:.0f} s", run.stdout[-1500:])
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
