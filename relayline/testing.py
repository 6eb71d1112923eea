"""What an application's own tests need to exercise its agents without a model, a
worker or a browser: a scripted model, in-memory channels, and ``run_turn``, which runs
one turn in this process and returns what a client of the chosen protocol would receive::

    from relayline import AgentSpec, tool
    from relayline.testing import ScriptedProvider, run_turn

    spec = AgentSpec(provider=ScriptedProvider({"rules": [{"match": "", "steps": [
        {"text": "Hi"}]}]}))
    turn = run_turn(spec, "Hello", protocol="vercel")
    assert turn.state.status == "completed"
    assert "text-delta" in turn.types
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from sqlalchemy.pool import StaticPool

from relayline.channels.testing import FakeChannel, MemoryChannel
from relayline.shared.agent import Agent, AgentSpec, RunState
from relayline.shared.errors import RunFailedError
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_id
from relayline.shared.persistence import Store
from relayline.shared.protocols.registry import adapter_factory
from relayline.shared.providers import ScriptedProvider

__all__ = [
    "FakeChannel",
    "MemoryChannel",
    "ProtocolEvent",
    "ScriptedProvider",
    "Turn",
    "memory_store",
    "run_turn",
]


@dataclasses.dataclass(frozen=True)
class Turn:
    """One turn as a client saw it: the run's state after it and the protocol events."""

    thread_id: str
    state: RunState
    events: tuple[ProtocolEvent, ...]

    @property
    def types(self) -> list[str]:
        """The events' types in order (``"text-delta"``, ``"TEXT_MESSAGE_CONTENT"``...)."""
        return [event.type for event in self.events]


def memory_store() -> Store:
    """A migrated store in a private in-memory SQLite database (one connection, shared
    by every thread of the process); it is gone when the store is disposed."""
    return Store("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})


def run_turn(
    spec: AgentSpec,
    message: str,
    *,
    protocol: Literal["native", "agui", "vercel"] = "native",
    store: Store | None = None,
    thread_id: str | None = None,
) -> Turn:
    """Run one turn of ``spec`` in this process, to completion, suspension or failure,
    and return the events ``protocol``'s adapter produced for it. Without ``store`` the
    turn runs in a fresh ``memory_store()``; pass one (and ``thread_id``) to continue a
    conversation or to inspect what was stored."""
    thread = thread_id or new_id("thread")
    own = store is None
    used = memory_store() if store is None else store
    try:
        agent = Agent(thread, spec=spec, store=used)
        agent.set_stream_adapter(adapter_factory(protocol, thread, {}))
        segment = agent.stream(message)
        events: list[ProtocolEvent] = []
        try:
            while True:
                events.append(next(segment))
        except StopIteration as end:
            state: RunState | None = end.value
        except RunFailedError:
            # the failure's frames were yielded first; the stored run says why
            state = agent.state()
        assert state is not None  # the turn was admitted, so it has a run
        return Turn(thread, state, tuple(events))
    finally:
        if own:
            used.dispose()
