"""Agent factories named in configuration (``module:factory``), loaded once per process."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping

from relayline.shared.agent.spec import AgentSpec
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
                spec = load_factory(self._targets[agent_id])()
                if not isinstance(spec, AgentSpec):
                    raise TypeError(f"Agent factory for {agent_id!r} must return an AgentSpec.")
                self._specs[agent_id] = spec
            return self._specs[agent_id]
