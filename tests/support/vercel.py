"""Vercel AI SDK test helpers shared by the adapter, UI message and flow suites: the real
``ai`` package's chunk schema and assembly (``VercelSchema``, run by Node), a browser
``ChatClient`` that holds what useChat would, and the agents and runs built on them."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.providers import ScriptedProvider
from relayline.shared.sse import encode_sse

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "node" / "vercel-schema"
FAILED = {"type": "error", "errorText": "The run failed."}
FINISH = {"type": "finish"}


# -- the real client -------------------------------------------------------------------


class VercelSchema:
    """Runs check.mjs: the ``ai`` package's chunk schema, strictly, plus assembly."""

    def __init__(self, node: str) -> None:
        self.node = node

    def _run(self, args: list[str], text: str) -> dict[str, Any]:
        done = subprocess.run(
            [self.node, str(SCHEMA_DIR / "check.mjs"), *args],
            input=text,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{done.stderr}\n--- input ---\n{text}"
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def stream(
        self, frames: Sequence[ProtocolEvent], message: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The UI message the package assembles from ``frames`` (starting at ``message``)."""
        assert_framing(frames)
        args = [] if message is None else [f"--message={json.dumps(message)}"]
        return self._run(args, "".join(encode_sse(frames)))

    def frames(self, frames: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """``stream`` for frames already in their JSON form."""
        events = [
            ProtocolEvent(f["type"], {k: v for k, v in f.items() if k != "type"}) for f in frames
        ]
        return self.stream(events)

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """``validateUIMessages`` accepts them and drops no field."""
        self._run(["--messages"], json.dumps(messages))


@functools.cache
def _installed_schema() -> VercelSchema | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None
    pinned = json.loads((SCHEMA_DIR / "package.json").read_text())["dependencies"]["ai"]
    installed = SCHEMA_DIR / "node_modules" / "ai" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != pinned:
        # A clean clone (CI): install exactly what package-lock.json pins.
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=SCHEMA_DIR,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return VercelSchema(node)


def vercel_schema_checker() -> VercelSchema:
    """The checker for a session fixture. Node.js is required: a missing one fails."""
    checker = _installed_schema()
    if checker is None:
        pytest.fail("Node.js and npm are needed to check streams with the ai package")
    return checker


def assert_framing(frames: Sequence[ProtocolEvent]) -> None:
    """At most one terminal and nothing after it; no payload shadows the type."""
    kinds = [f.type for f in frames]
    assert all("type" not in f.data for f in frames)
    terminals = [i for i, kind in enumerate(kinds) if kind in ("finish", "error")]
    assert len(terminals) <= 1 and (not terminals or terminals[0] == len(kinds) - 1), kinds


class ChatClient:
    """What ``useChat`` holds for one thread: the messages, as the package builds them."""

    def __init__(self, schema: VercelSchema, thread_id: str, text: str) -> None:
        self.schema = schema
        self.thread_id = thread_id
        self.history: list[dict[str, Any]] = []  # earlier turns, sent with every request
        self.user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
        self.assistant: dict[str, Any] | None = None
        self.errors: list[str] = []

    def receive(self, frames: Sequence[ProtocolEvent]) -> list[dict[str, Any]]:
        result = self.schema.stream(frames, self.assistant)
        self.assistant = result["message"] or self.assistant
        self.errors += result["errors"]
        return [f.to_json() for f in frames]

    def part(self, call_id: str) -> dict[str, Any]:
        assert self.assistant is not None
        return next(p for p in self.assistant["parts"] if p.get("toolCallId") == call_id)

    def add_tool_output(self, call_id: str, output: Any = None, error: str | None = None) -> None:
        part = self.part(call_id)
        part.pop("output", None)
        part.pop("errorText", None)
        if error is None:
            part.update(state="output-available", output=output)
        else:
            part.update(state="output-error", errorText=error)

    def respond(self, call_id: str, approved: bool, reason: str | None = None) -> None:
        part = self.part(call_id)
        assert part["state"] == "approval-requested"
        part["state"] = "approval-responded"
        part["approval"] = {**part["approval"], "approved": approved}
        if reason is not None:
            part["approval"]["reason"] = reason

    @property
    def message_id(self) -> str:
        assert self.assistant is not None
        message_id: str = self.assistant["id"]
        return message_id

    def next_turn(self, message_id: str, text: str) -> None:
        assert self.assistant is not None
        self.history += [self.user, self.assistant]
        self.user = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
        self.assistant = None

    def body(self) -> dict[str, Any]:
        messages = [*self.history, self.user] + ([self.assistant] if self.assistant else [])
        return {"id": self.thread_id, "trigger": "submit-message", "messages": messages}

    def adapter(self) -> VercelAIAdapter:
        if self.assistant is None:
            return VercelAIAdapter()
        return VercelAIAdapter(self.assistant["id"], self.assistant["parts"])


def vercel_agent(store: Store, thread: str, spec: AgentSpec, client: ChatClient) -> Agent:
    agent = Agent(thread, spec, store)
    agent.set_stream_adapter(client.adapter)
    return agent


def kinds(frames: Sequence[dict[str, Any]]) -> list[str]:
    return [f["type"] for f in frames if not f["type"].startswith("data-")]


def scripted(*steps: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider({"chunk_size": 4, "rules": [{"match": "", "steps": list(steps)}]})


def run(adapter: VercelAIAdapter, *items: Any) -> list[dict[str, Any]]:
    frames = adapter.start()
    for item in items:
        frames += adapter.transform(item)
    return [f.to_json() for f in frames]
