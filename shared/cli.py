"""The ``relayline`` command."""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from shared.agent import Agent, AgentSpec
from shared.chunks import InterruptEvent, TextChunk, ToolResultChunk
from shared.interrupts import ApprovalRequest
from shared.persistence import Store
from shared.settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relayline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a scripted demo conversation in the terminal")
    demo.add_argument("--database", help="database URL (default: a temporary SQLite file)")
    commands.add_parser("migrate", help="create or upgrade the database schema")
    args = parser.parse_args(argv)
    if args.command == "migrate":
        settings = Settings.from_env()
        Store(settings.database_url).dispose()
        print(f"database at {settings.database_url} is up to date")
        return 0
    return run_demo(args.database)


def _print_segment(agent: Agent, events: object) -> None:
    for item in events:  # type: ignore[attr-defined]
        if isinstance(item, TextChunk):
            print(item.content, end="", flush=True)
        elif isinstance(item, ToolResultChunk):
            print(f"\n  [tool {item.tool.name} -> {item.tool.result}]", flush=True)
        elif isinstance(item, InterruptEvent):
            print(f"\n  [suspended: {item.request.message}]", flush=True)
    print()


def run_demo(database: str | None) -> int:
    from shared.demo import build

    spec: AgentSpec = build()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(database or f"sqlite:///{Path(tmp) / 'demo.db'}")
        thread = f"demo-{uuid.uuid4().hex[:8]}"
        for text in ("Hello there", "What is the weather?", "Delete report.pdf", "Page title?"):
            print(f"> {text}")
            _print_segment(Agent(thread, spec, store), Agent(thread, spec, store).stream(text))
            # Each continuation uses a fresh Agent, as another process would.
            state = Agent(thread, spec, store).state()
            while state is not None and state.status == "suspended":
                agent = Agent(thread, spec, store)
                request = state.interrupt
                if isinstance(request, ApprovalRequest):
                    print("  (approving every action)")
                    staged = agent.submit_approval_decisions(
                        {a.id: "approve" for a in request.actions}
                    )
                else:
                    assert request is not None
                    print("  (the 'browser' answers the frontend tool)")
                    staged = agent.submit_tool_results(
                        {c.id: {"result": "relayline demo"} for c in request.tool_calls}
                    )
                _print_segment(agent, staged.events())
                state = agent.state()
        store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
