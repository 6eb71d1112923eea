"""Real turns through a real Celery worker whose default agent is configured by
RELAYLINE_MODEL alone: pydantic-ai's OpenAI chat model (``openai-chat:``) and its
Anthropic model (``anthropic:``) talk to a local server on 127.0.0.1 replaying each
provider's documented streaming wire format (no network, no key). The native stream
carries text, the tool call split over many deltas, the tool's result and the run's
usage on its terminal; the run status route returns the usage; a stream cut short
fails the run with the native error frame."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from relayline.shared.texts import PROVIDER_BROKE_OFF
from tests.support.model_wire import (
    API_KEY,
    ModelWire,
    Reply,
    anthropic_stream,
    openai_stream,
    split,
)
from tests.support.redis_server import RedisDatabases
from tests.support.stack import WebServer, fresh_env, running_stack

pytestmark = pytest.mark.integration

ARGUMENTS = '{"city": "Lisbon"}'


class Turns:
    def __init__(self, kind: str, web: WebServer, wire: ModelWire) -> None:
        self.kind = kind
        self.web = web
        self.wire = wire

    def answer(self, text: list[str], **options: Any) -> list[str]:
        if self.kind == "openai":
            return openai_stream(text, **options)
        tool_calls = options.pop("tool_calls", ())
        return anthropic_stream(text, tool_uses=tool_calls, **options)

    def post(self, thread: str, content: str) -> list[dict[str, Any]]:
        response = requests.post(
            f"{self.web.url}/api/threads/{thread}/messages",
            json={"content": content},
            stream=True,
            timeout=60,
        )
        assert response.status_code == 200, response.text
        lines = (raw.decode("utf-8") for raw in response.iter_lines())
        return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]

    def run(self, thread: str) -> dict[str, Any]:
        body: dict[str, Any] = requests.get(
            f"{self.web.url}/api/threads/{thread}", timeout=30
        ).json()
        run: dict[str, Any] = body["run"]
        return run


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def turns(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
) -> Iterator[Turns]:
    wire = ModelWire().start()
    if request.param == "openai":
        model = {
            "RELAYLINE_MODEL": "openai-chat:gpt-relayline-test",
            "OPENAI_BASE_URL": f"{wire.url}/v1",
            "OPENAI_API_KEY": API_KEY,
        }
    else:
        model = {
            "RELAYLINE_MODEL": "anthropic:claude-relayline-test",
            "ANTHROPIC_BASE_URL": wire.url,
            "ANTHROPIC_API_KEY": API_KEY,
        }
    counts = tmp_path_factory.mktemp(f"pydantic-ai-{request.param}")
    try:
        with redis_databases.database(f"pydantic-ai turns ({request.param})") as redis_url:
            env = fresh_env(counts, redis_url, RELAYLINE_AGENT="relayline.demo:build", **model)
            with running_stack(env, workers=1) as (web, _):
                yield Turns(request.param, web, wire)
    finally:
        wire.stop()


def test_a_turn_with_a_backend_tool_streams_and_records_usage(turns: Turns) -> None:
    turns.wire.replies.clear()
    turns.wire.queue(
        Reply(
            turns.answer(
                ["Let me look."],
                tool_calls=[("call_w1", "get_weather", split(ARGUMENTS, 2))],
                usage=(30, 10),
            )
        ),
        Reply(turns.answer(["It is ", "sunny ", "in Lisbon."], usage=(60, 5))),
    )
    thread = f"pai-{turns.kind}-1"
    events = turns.post(thread, "What is the weather in Lisbon?")
    types = [e["type"] for e in events]
    assert types.count("tool-argument") == len(split(ARGUMENTS, 2))
    [call] = [e for e in events if e["type"] == "tool-call"]
    assert call["tool"]["name"] == "get_weather"
    assert call["tool"]["inputs"] == {"city": "Lisbon"}
    [result] = [e for e in events if e["type"] == "tool-result"]
    assert result["tool"]["result"] == "sunny and 21 °C in Lisbon"
    text = "".join(e["content"] for e in events if e["type"] == "text")
    assert text == "Let me look.It is sunny in Lisbon."
    assert events[-2] == {"type": "finish", "usage": {"input": 90, "output": 15}}
    run = turns.run(thread)
    assert events[-1] == {"type": "done", "status": "completed", "runId": run["runId"]}
    assert run["status"] == "completed"
    assert run["usage"] == {"input": 90, "output": 15}

    # what the worker's model sent: the demo's tools, then the tool's result
    first, second = (r.body for r in turns.wire.received[-2:])
    assert {t.get("name") or t["function"]["name"] for t in first["tools"]} == {
        "get_weather",
        "delete_file",
        "read_title",
    }
    assert "sunny and 21 °C in Lisbon" in json.dumps(second["messages"], ensure_ascii=False)
    authorization = turns.wire.received[-1].headers
    assert API_KEY in (authorization.get("authorization", "") + authorization.get("x-api-key", ""))


def test_a_stream_cut_short_fails_the_run(turns: Turns) -> None:
    turns.wire.replies.clear()
    events = turns.answer(["Half ", "an ", "answer"])
    turns.wire.queue(Reply(events[:4], cut=True))
    thread = f"pai-{turns.kind}-2"
    frames = turns.post(thread, "Tell me something")
    assert [f["type"] for f in frames[-2:]] == ["error", "done"]
    assert frames[-2]["code"] == "provider_error" and frames[-1]["status"] == "failed"
    assert frames[-2]["message"] == PROVIDER_BROKE_OFF
    run = turns.run(thread)
    assert run["status"] == "failed" and run["usage"] is None
