"""Traces: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, one turn is one trace across the
production web server and a real Celery worker: the HTTP request span, the enqueue, the
task, each model call and the tool execution share its trace id, exported over OTLP/HTTP
to a receiver on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.support.otlp import ReceivedSpan, otlp_receiver
from tests.support.redis_server import RedisDatabases
from tests.support.sse import events_of, text_of
from tests.support.stack import Worker, fresh_env
from tests.support.web_process import WebProcess

pytestmark = pytest.mark.integration


def _complete(spans: list[ReceivedSpan]) -> bool:
    """Every span the turn makes has arrived (each process exports on its own schedule:
    the web's request span ends only after the stream did)."""
    names = [s.name for s in spans]
    web_request = any(s.service == "relayline-web" and "messages" in s.name for s in spans)
    return (
        web_request
        and any(n.startswith("apply_async/relayline.run_turn") for n in names)
        and any(n.startswith("run/relayline.run_turn") for n in names)
        and names.count("relayline.model_call") >= 2
        and "relayline.tool" in names
    )


def test_one_turn_is_one_trace_across_web_broker_and_worker(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with (
        otlp_receiver() as receiver,
        redis_databases.database(f"tracing {tmp_path.name}") as redis_url,
    ):
        env = fresh_env(
            tmp_path,
            redis_url,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_BSP_SCHEDULE_DELAY="100",  # milliseconds between exports
        )
        worker = Worker(env, "traced")
        web = WebProcess(env, tmp_path, "web")
        try:
            answer = requests.post(
                f"{web.url}/api/threads/t-1/messages", json={"content": "weather?"}, timeout=60
            )
            assert text_of(events_of(answer.text)) == "Weather: sunny in Oslo"
            spans = receiver.wait_for(_complete, timeout=30)
        finally:
            web.stop()
            worker.stop()
    by_name = {s.name: s for s in spans}
    request = next(s for s in spans if s.service == "relayline-web" and "messages" in s.name)
    publish = next(s for s in spans if s.name.startswith("apply_async/relayline.run_turn"))
    task = next(s for s in spans if s.name.startswith("run/relayline.run_turn"))
    model_calls = [s for s in spans if s.name == "relayline.model_call"]
    tool = by_name["relayline.tool"]
    one_trace = {request.trace_id, publish.trace_id, task.trace_id, tool.trace_id}
    one_trace |= {s.trace_id for s in model_calls}
    assert len(one_trace) == 1  # one trace follows the turn across both processes
    assert publish.service == "relayline-web" and task.service == "relayline-worker"
    assert task.parent_id == publish.span_id  # carried in the task's message headers
    assert {s.parent_id for s in model_calls} == {task.span_id}
    assert tool.attributes["relayline.tool"] == "weather"
    assert tool.attributes["relayline.thread_id"] == "t-1"
    assert [s.attributes["relayline.step"] for s in model_calls] == [1, 2]
