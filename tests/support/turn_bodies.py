"""The request of a new turn saying some text, in each protocol: the route and the body a
client of that protocol posts (AG-UI RunAgentInput, Vercel submit-message, native)."""

from __future__ import annotations

from typing import Any


def new_turn(protocol: str, thread: str, text: str) -> tuple[str, dict[str, Any]]:
    """The path and JSON body of a first turn of ``thread`` saying ``text``."""
    if protocol == "native":
        return f"/api/threads/{thread}/messages", {"content": text}
    if protocol == "agui":
        return "/agui", {
            "threadId": thread,
            "runId": f"client-{thread}",
            "state": {},
            "messages": [{"id": f"u-{thread}", "role": "user", "content": text}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    parts = [{"type": "text", "text": text}]
    return "/api/chat", {
        "id": thread,
        "trigger": "submit-message",
        "messages": [{"id": f"u-{thread}", "role": "user", "parts": parts}],
    }
