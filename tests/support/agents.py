"""Agent specs the tests share, usable from the test process and from subprocesses.

Side effects are counted in files under a directory so that counts add up across
processes: ``<dir>/model`` gets a line per model call, ``<dir>/tool.<name>`` per execution.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relayline.shared.agent import AgentSpec, FrontendTool, tool
from relayline.shared.providers import ScriptedProvider
from relayline.shared.providers.base import ModelDelta, ModelRequest


class CountingProvider:
    """The scripted provider, counting calls in a file. ``crash_on_call`` kills the process
    (fault injection) when that call number starts: the run's last checkpoint stays.
    With ``sigkill`` the process dies by SIGKILL, once (a marker file remembers it); with
    ``kill_worker`` its parent (the Celery worker's main process) dies first, as when a
    whole worker is lost and nothing is left to redeliver the task."""

    def __init__(
        self,
        script: dict[str, Any],
        counts: Path,
        crash_on_call: int | None = None,
        sigkill: bool = False,
        kill_worker: bool = False,
    ):
        self.inner = ScriptedProvider(script)
        self.counts = counts
        self.crash_on_call = crash_on_call
        self.sigkill = sigkill
        self.kill_worker = kill_worker

    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        calls = count(self.counts, "model") + 1
        if self.crash_on_call == calls:
            if not self.sigkill:
                os._exit(17)
            if count(self.counts, "killed") == 0:
                bump(self.counts, "killed")
                # A prefork child kills its worker's main process first; under the
                # threads pool this process is the whole worker (never kill its parent,
                # the test session).
                if self.kill_worker and _is_celery_worker(os.getppid()):
                    os.kill(os.getppid(), signal.SIGKILL)
                os.kill(os.getpid(), signal.SIGKILL)
        bump(self.counts, "model")
        # Every delta handed to the loop, and whether the loop closed the stream early:
        # what a stopped run's test reads to see the model call end.
        finished = False
        try:
            for delta in self.inner.stream(request):
                bump(self.counts, "model.delta")
                yield delta
            finished = True
        finally:
            if not finished:
                bump(self.counts, "model.closed")


def _is_celery_worker(pid: int) -> bool:
    try:
        # ``python -m celery ...``: the worker's main process, never a test session.
        return b"\0-m\0celery\0" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def bump(counts: Path, name: str) -> None:
    with open(counts / name, "a", encoding="utf-8") as handle:
        handle.write("x\n")


def count(counts: Path, name: str) -> int:
    path = counts / name
    return len(path.read_text().splitlines()) if path.exists() else 0


BATCH_SCRIPT: dict[str, Any] = {
    "chunk_size": 5,
    "rules": [
        {
            "match": "(?i)batch",
            "steps": [
                {
                    "text": "Working on it.",
                    "tool_calls": [
                        {"id": "call_a", "name": "browser", "arguments": {"page": "A"}},
                        {"id": "call_b", "name": "browser", "arguments": {"page": "B"}},
                        {"id": "call_c", "name": "browser", "arguments": {"page": "C"}},
                    ],
                },
                {"text": "Results: {{tool_results}}"},
            ],
        },
        {
            "match": "(?i)title",
            "steps": [
                {"tool_calls": [{"id": "call_t", "name": "read_title", "arguments": {}}]},
                {"text": "The title is {{last_tool_result}}."},
            ],
        },
        {
            "match": "(?i)delete",
            "steps": [
                {
                    "tool_calls": [
                        {"id": "call_d", "name": "delete_file", "arguments": {"path": "r.pdf"}},
                        {"id": "call_t", "name": "read_title", "arguments": {}},
                    ]
                },
                {"text": "Finished: {{tool_results}}"},
            ],
        },
        {
            # one approval, then the answer: a run that completes once it is approved
            "match": "(?i)erase",
            "steps": [
                {
                    "tool_calls": [
                        {"id": "call_e", "name": "delete_file", "arguments": {"path": "e"}}
                    ]
                },
                {"text": "Erased: {{last_tool_result}}"},
            ],
        },
        {
            # a short answer in a handful of deltas: a stop can land at any of them
            "match": "(?i)brief",
            "steps": [{"chunk_delay_ms": 20, "text": "A brief answer in some chunks."}],
        },
        {
            "match": "(?i)meet (\\w+) after (\\w+)",
            "steps": [
                {"tool_calls": [{"id": "call_m", "name": "meet", "arguments": {"text": "x"}}]},
                {"text": "Met: {{last_tool_result}}"},
            ],
        },
        {
            "match": "(?i)gated",
            "steps": [
                {
                    "text": "Before the gate.",
                    "tool_calls": [{"id": "call_g", "name": "gate", "arguments": {}}],
                },
                {"text": "After the gate: {{last_tool_result}}"},
            ],
        },
        {
            "match": "(?i)pause",
            "steps": [{"delay_ms": 700, "text": "Back after a pause."}],
        },
        {
            "match": "(?i)flood",
            "steps": [{"text": "Flowing words. " * 1000}],
        },
        {
            "match": "(?i)explode",
            "steps": [{"text": "About to", "error": "the model fell over"}],
        },
        {
            "match": "(?i)story",
            "steps": [{"chunk_delay_ms": 50, "text": "Once upon a time, " * 200}],
        },
        {
            "match": "(?i)slow",
            "steps": [{"chunk_delay_ms": 20, "text": "One slow answer. " * 12}],
        },
        {
            "match": "(?i)lookup",
            "steps": [
                {"tool_calls": [{"id": "call_l", "name": "lookup", "arguments": {"key": "k"}}]},
                {"text": "Found: {{last_tool_result}}"},
            ],
        },
        {
            # a backend tool, then a streamed answer long enough to lose a worker in
            "match": "(?i)forecast",
            "steps": [
                {
                    "tool_calls": [
                        {"id": "call_f", "name": "weather", "arguments": {"city": "Bergen"}}
                    ]
                },
                {"chunk_delay_ms": 20, "text": "Forecast: {{last_tool_result}}. " * 25},
            ],
        },
        {
            "match": "(?i)weather",
            "steps": [
                {
                    "tool_calls": [
                        {"id": "call_w", "name": "weather", "arguments": {"city": "Oslo"}}
                    ]
                },
                {"text": "Weather: {{last_tool_result}}"},
            ],
        },
        {
            "match": "",
            "steps": [{"reasoning": "Greeting.", "text": "Hello! {{last_user_message}}"}],
        },
    ],
}


def build_spec(
    counts: Path,
    crash_on_call: int | None = None,
    frontend_wait_timeout: float | None = None,
    sigkill: bool = False,
    kill_worker: bool = False,
    crash_in_tool: bool = False,
) -> AgentSpec:
    def maybe_crash(name: str) -> None:
        """With ``crash_in_tool``, the process dies inside tool ``name``, once."""
        if crash_in_tool and count(counts, f"crashed.{name}") == 0:
            bump(counts, f"crashed.{name}")
            os._exit(17)

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file to delete.
        """
        bump(counts, "tool.delete_file")
        return f"{path} deleted"

    @tool
    def weather(city: str) -> str:
        """Current weather.

        Args:
            city: City name.
        """
        bump(counts, "tool.weather")
        maybe_crash("weather")
        return f"sunny in {city}"

    @tool(idempotent=True)
    def lookup(key: str) -> str:
        """Read a value (safe to run again).

        Args:
            key: The key.
        """
        bump(counts, "tool.lookup")
        maybe_crash("lookup")
        return f"value of {key}"

    @tool
    def meet(text: str) -> str:
        """Rendezvous: mark this turn present, then wait (bounded) for the other one.

        Two turns of different threads can only both finish if they run at once.

        Args:
            text: unused.
        """
        try:  # the first turn claims "a" atomically, the second becomes "b"
            os.close(os.open(counts / "meet.claim", os.O_CREAT | os.O_EXCL))
            mine, theirs = "meet.a", "meet.b"
        except FileExistsError:
            mine, theirs = "meet.b", "meet.a"
        bump(counts, mine)
        deadline = time.monotonic() + 20
        while count(counts, theirs) == 0:
            if time.monotonic() > deadline:
                return "alone"
            time.sleep(0.02)  # waiting on the other process's file, bounded above
        return "together"

    @tool
    def gate() -> str:
        """Hold the turn until the test opens the gate (the file ``gate.open``), bounded.

        A test can so act while a turn is known to be mid-way, without timing guesses.
        """
        bump(counts, "gate.reached")
        deadline = time.monotonic() + 30
        while not (counts / "gate.open").exists():
            if time.monotonic() > deadline:
                return "timed out"
            time.sleep(0.02)  # waiting on the test's file, bounded above
        return "opened"

    return AgentSpec(
        provider=CountingProvider(BATCH_SCRIPT, counts, crash_on_call, sigkill, kill_worker),
        tools=[delete_file, weather, lookup, meet, gate],
        frontend_tools=[
            FrontendTool("read_title", "Read the page title"),
            FrontendTool(
                "browser",
                "Open a page in the browser",
                {"type": "object", "properties": {"page": {"type": "string"}}},
                requires_approval=True,
            ),
        ],
        system_prompt="Test agent.",
        frontend_wait_timeout=frontend_wait_timeout,
    )


def env_spec() -> AgentSpec:
    """The test agent for worker processes: counts go to $RELAYLINE_TEST_COUNTS."""
    lose_worker = os.environ.get("RELAYLINE_TEST_KILL_WORKER_ON_CALL")
    crash = lose_worker or os.environ.get("RELAYLINE_TEST_SIGKILL_ON_CALL")
    wait = os.environ.get("RELAYLINE_TEST_WAIT_TIMEOUT")
    return build_spec(
        # The web process only stages inputs (it never runs the model or tools).
        Path(os.environ.get("RELAYLINE_TEST_COUNTS", tempfile.gettempdir())),
        crash_on_call=int(crash) if crash else None,
        sigkill=True,
        kill_worker=bool(lose_worker),
        frontend_wait_timeout=float(wait) if wait else None,
    )


def cancel_on_disconnect_spec() -> AgentSpec:
    """The test agent of :func:`env_spec` with ``AgentSpec(on_disconnect="cancel")``: a
    relayed client that drops its request stops the run unless the request says
    ``?onDisconnect=continue``."""
    return dataclasses.replace(env_spec(), on_disconnect="cancel")
