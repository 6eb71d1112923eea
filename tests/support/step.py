"""Run one operation on a thread in a fresh process and print the RunState as JSON.

    python -m tests.support.step DATABASE THREAD COUNTS_DIR OP [JSON] [--crash-on-call N]

``op`` is ``turn`` (json: the text), ``approve`` / ``results`` (json: the native map),
``inputs-agui`` (json: an AG-UI payload) or ``recover``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relayline.shared.agent import Agent
from relayline.shared.persistence import Store
from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from tests.support.agents import build_spec


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("database")
    parser.add_argument("thread")
    parser.add_argument("counts")
    parser.add_argument("op")
    parser.add_argument("payload", nargs="?", default="null")
    parser.add_argument("--crash-on-call", type=int)
    args = parser.parse_args()
    store = Store(args.database)
    spec = build_spec(Path(args.counts), crash_on_call=args.crash_on_call)
    agent = Agent(args.thread, spec, store)
    payload = json.loads(args.payload)
    if args.op == "turn":
        state = agent.run(payload)
    elif args.op == "approve":
        state = agent.submit_approval_decisions(payload).run()
    elif args.op == "results":
        state = agent.submit_tool_results(payload).run()
    elif args.op == "inputs-agui":
        state = agent.submit_inputs(payload, AGUIInputTranslator()).run()
    elif args.op == "recover":
        state = agent.recover(attempt=payload).run()
    else:
        raise SystemExit(f"unknown op {args.op}")
    interrupt = state.interrupt.to_json() if state.interrupt else None
    print(
        json.dumps(
            {
                "status": state.status,
                "interrupt": interrupt,
                "message": state.message,
                "attempt": state.attempt,
                "runId": state.run_id,
                "error": state.error,
            }
        )
    )
    store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
