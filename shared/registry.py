"""Agent factories named in configuration (``module:factory``), loaded once per process.

An agent that cannot be loaded (no such module, an import error in it, a factory that
raises or returns something else) is an ``AgentUnavailableError`` naming the setting to
fix: the web answers 503, a worker fails the turn with ``agent_unavailable``."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping

from relayline.shared.agent.spec import AgentSpec
from relayline.shared.errors import AgentUnavailableError
from relayline.shared.jobs import DEFAULT_AGENT
from relayline.shared.settings import Settings


def load_factory(target: str) -> Callable[[], AgentSpec]:
    """Import ``module:attribute`` and return the callable it names."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"An agent factory looks like module:function, got {target!r}.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"Cannot import agent module {module_name!r}: {exc}.") from exc
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{target!r} does not name a callable agent factory.")
    return factory  # type: ignore[no-any-return]


class AgentRegistry:
    """Agent specs by id: ``default`` is RELAYLINE_AGENT, the rest RELAYLINE_AGENTS.

    Specs are built once and reused: they hold providers and tools, no run state. Safe
    to share between threads (a worker's pool threads ask at once): a spec is built
    under a lock, so a factory runs once per id."""

    def __init__(self, targets: Mapping[str, str]) -> None:
        self._targets = dict(targets)
        self._specs: dict[str, AgentSpec] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentRegistry:
        return cls({DEFAULT_AGENT: settings.agent, **settings.agents})

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._targets

    def ids(self) -> list[str]:
        return list(self._targets)

    def spec(self, agent_id: str = DEFAULT_AGENT) -> AgentSpec:
        if agent_id not in self._targets:
            raise KeyError(agent_id)
        found = self._specs.get(agent_id)
        if found is not None:
            return found
        with self._lock:
            if agent_id not in self._specs:
                self._specs[agent_id] = self._load(agent_id)
            return self._specs[agent_id]

    def _load(self, agent_id: str) -> AgentSpec:
        """Build the agent's spec; any failure is an AgentUnavailableError saying which
        setting names the agent (not cached: the next request tries again)."""
        target = self._targets[agent_id]
        try:
            spec = load_factory(target)()
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"Agent factory for {agent_id!r} must return an AgentSpec.")
        except Exception as exc:
            raise AgentUnavailableError(_unavailable(agent_id, target, exc)) from exc
        return spec


def _unavailable(agent_id: str, target: str, exc: Exception) -> str:
    """Which agent, which setting names it, and why it does not load."""
    variable = "RELAYLINE_AGENT" if agent_id == DEFAULT_AGENT else "RELAYLINE_AGENTS"
    # load_factory's own errors say what is wrong; anything else is the module's or the
    # factory's own exception
    problem = (
        str(exc) if isinstance(exc, ValueError | TypeError) else f"{type(exc).__name__}: {exc}"
    )
    return (
        f"The agent '{agent_id}' cannot be loaded from {variable} ({target}): "
        f"{problem.rstrip('.')}. Fix {variable} or the agent's module."
    )
