"""The three frontend protocols by name: which adapter a segment gets, built from the
client's seed data (JSON, so a Celery task can carry it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.adapters import AGUIAdapter, NativeAdapter, StreamAdapter, VercelAIAdapter
from shared.events import ProtocolEvent

PROTOCOLS = ("agui", "vercel", "native")


def adapter_factory(
    protocol: str, thread_id: str, seed: dict[str, Any]
) -> Callable[[], StreamAdapter]:
    """A factory of fresh adapters for ``protocol``, seeded with what the client holds.

    AG-UI seed: ``runId`` (the client's), ``messages``, ``state``. Vercel seed:
    ``messageId`` and ``parts`` of the assistant message a continuation extends."""
    if protocol == "agui":
        return lambda: AGUIAdapter(
            thread_id, seed.get("runId"), seed.get("messages") or (), seed.get("state") or {}
        )
    if protocol == "vercel":
        return lambda: VercelAIAdapter(seed.get("messageId"), seed.get("parts") or ())
    if protocol == "native":
        return NativeAdapter
    raise ValueError(f"Unknown protocol {protocol!r}; expected one of {PROTOCOLS}.")


def failure_frames(
    protocol: str, thread_id: str, seed: dict[str, Any], error: BaseException, *, started: bool
) -> list[ProtocolEvent]:
    """The protocol's error frames for a failure outside the run (admission refused,
    task lost, relay broken). ``started``: the client already got the start frames."""
    adapter = adapter_factory(protocol, thread_id, seed)()
    frames = [] if started else adapter.start()
    return frames + adapter.error(error)
