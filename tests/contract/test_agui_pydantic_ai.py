"""The official ``@ag-ui/client`` (1.0.0) ``HttpAgent`` against ``POST /agui`` of a
running stack whose default agent's model is a pydantic-ai model chosen by
``RELAYLINE_MODEL`` alone: its OpenAI chat model (``openai-chat:``) and its Anthropic
model (``anthropic:``), each pointed at ``tests.support.model_wire`` on 127.0.0.1, which
replays that provider's documented streaming wire format (no network, no real key).

Real Celery worker processes, the web app on a real port, Redis and a SQLite database,
one stack per provider. The scenarios live in the Node file
``tests/contract/agui/pydantic-ai/turns.test.mjs`` (a folder of its own, so the
scripted-agent suite of test_agui_client.py, which runs ``agui/*.test.mjs``, does not
pick it up). It describes what the model answers in provider-neutral terms and posts
that to a local control endpoint of this module, which renders it in the stack's wire
format and queues it on the replay server; the same endpoint tells the Node file what
the model was sent.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.model_wire import API_KEY, ModelWire, Reply, anthropic_stream, openai_stream
from tests.support.node_suites import install_node_packages, run_node_tests
from tests.support.redis_server import RedisDatabases
from tests.support.stack import Worker, fresh_env, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.contract]

AGUI_DIR = Path(__file__).parent / "agui"
SUITE = AGUI_DIR / "pydantic-ai" / "turns.test.mjs"
#: seconds the Node file may take for one provider (the machine is loaded at times)
SUITE_TIMEOUT = 300.0


def model_env(kind: str, wire: ModelWire) -> dict[str, str]:
    """RELAYLINE_MODEL and the provider's own key and base URL variables."""
    if kind == "openai":
        return {
            "RELAYLINE_MODEL": "openai-chat:gpt-relayline-test",
            "OPENAI_BASE_URL": f"{wire.url}/v1",
            "OPENAI_API_KEY": API_KEY,
        }
    return {
        "RELAYLINE_MODEL": "anthropic:claude-relayline-test",
        "ANTHROPIC_BASE_URL": wire.url,
        "ANTHROPIC_API_KEY": API_KEY,
    }


def render(kind: str, spec: dict[str, Any]) -> Reply:
    """One model answer in the wire format of ``kind``. ``spec``: ``text`` (fragments),
    ``toolCalls`` (``{id, name, arguments: [fragments]}``), ``usage`` (``[input,
    output]``) and ``cut`` (the stream ends right after its last delta: no finish, no
    terminating chunk, the connection closed)."""
    text = list(spec.get("text", []))
    calls = [(c["id"], c["name"], list(c["arguments"])) for c in spec.get("toolCalls", [])]
    usage = tuple(spec.get("usage", (11, 7)))
    cut = bool(spec.get("cut", False))
    if kind == "openai":
        events = openai_stream(
            text, tool_calls=calls, usage=None if cut else (usage[0], usage[1]), done=not cut
        )
        if cut:
            events = events[:-1]  # the finish_reason chunk
    else:
        events = anthropic_stream(text, tool_uses=calls, usage=(usage[0], usage[1]), stop=not cut)
        if cut:
            events = events[:-1]  # the last content_block_stop
    return Reply(events, cut=cut)


@dataclasses.dataclass
class WireControl:
    kind: str
    wire: ModelWire

    def script(self, body: dict[str, Any]) -> dict[str, Any]:
        """Replace the queued answers: ``{"replies": [spec, ...]}``; answers how many
        requests the model had received before, so the caller can read its own."""
        replies = [render(self.kind, spec) for spec in body["replies"]]
        self.wire.replies.clear()
        self.wire.queue(*replies)
        return {"received": len(self.wire.received)}

    def received(self) -> list[dict[str, Any]]:
        """Every request the model received: its path, JSON body and User-Agent, and
        whether it carried the configured key (``authorization`` or ``x-api-key``)."""
        return [
            {
                "path": r.path,
                "body": r.body,
                "keyed": API_KEY
                in r.headers.get("authorization", "") + r.headers.get("x-api-key", ""),
                "userAgent": r.headers.get("user-agent", ""),
            }
            for r in list(self.wire.received)
        ]


@contextmanager
def control_server(control: WireControl) -> Iterator[str]:
    """``POST /replies`` and ``GET /received`` on 127.0.0.1 only."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, value: object) -> None:
            body = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            if self.path != "/replies":
                self.send_error(404)
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                self._answer(200, control.script(json.loads(self.rfile.read(length))))
            except Exception as exc:  # reported to the Node test that asked
                self._answer(500, {"error": f"{type(exc).__name__}: {exc}"})

        def do_GET(self) -> None:
            if self.path != "/received":
                self.send_error(404)
                return
            self._answer(200, control.received())

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


@dataclasses.dataclass(frozen=True)
class PydanticAIStack:
    kind: str
    base_url: str
    counts: Path
    control_url: str
    workers: list[Worker]


@pytest.fixture(scope="module")
def agui_packages(node: str) -> Path:
    install_node_packages(AGUI_DIR)
    return AGUI_DIR


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def pydantic_ai_stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
) -> Iterator[PydanticAIStack]:
    kind: str = request.param
    wire = ModelWire().start()
    counts = tmp_path_factory.mktemp(f"agui-pydantic-ai-{kind}")
    try:
        with redis_databases.database(f"AG-UI pydantic-ai stack ({kind})") as redis_url:
            env = fresh_env(
                counts, redis_url, RELAYLINE_AGENT="relayline.demo:build", **model_env(kind, wire)
            )
            with (
                running_stack(env, workers=1) as (web, workers),
                control_server(WireControl(kind, wire)) as control_url,
            ):
                yield PydanticAIStack(kind, web.url, counts, control_url, workers)
    finally:
        wire.stop()


@pytest.mark.timeout(SUITE_TIMEOUT + 120)
def test_official_agui_client_runs_pydantic_ai_turns(
    node: str, agui_packages: Path, pydantic_ai_stack: PydanticAIStack
) -> None:
    stack = pydantic_ai_stack
    done, summary = run_node_tests(
        node,
        agui_packages,
        [SUITE],
        env={
            "RELAYLINE_BASE_URL": stack.base_url,
            "RELAYLINE_TEST_COUNTS": str(stack.counts),
            # helpers.mjs requires it; no scenario here restarts the worker
            "RELAYLINE_CONTROL_URL": stack.control_url,
            "RELAYLINE_WIRE_CONTROL_URL": stack.control_url,
            "RELAYLINE_WIRE_KIND": stack.kind,
            "RELAYLINE_WIRE_KEY": API_KEY,
        },
        timeout=SUITE_TIMEOUT,
    )
    report = f"{done.stdout[-30000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.failed == 0 and summary.cancelled == 0, report
    assert summary.passed > 0 and summary.passed == summary.tests, report
    assert summary.skipped == 0 and summary.todo == 0, report
    # The cut stream failed a run in the worker: its log names no key either.
    for worker in stack.workers:
        assert API_KEY not in worker.log.read_text(), worker.log
