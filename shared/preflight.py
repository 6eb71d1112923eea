"""The model preflight: what would fail every turn, found before the first one.

Each configured agent is loaded (``agent_unavailable`` when it cannot be) and its
provider's ``preflight()`` asked, when it has one (``OpenAIProvider``,
``PydanticAIProvider``: a missing SDK, a missing key, an unknown model name, nothing
listening at the base URL; no model is called). ``relayline up`` and ``relayline web``
print one line per problem before they start, a worker logs them as warnings when it is
ready, and ``/readyz`` reports them (``model``), checked again at most every
``PREFLIGHT_TTL`` seconds. Problems are warnings: nothing refuses to start, since a
model server may well come up after relayline.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Final, Literal, TypedDict

from relayline.shared.errors import AgentUnavailableError, FailureCode
from relayline.shared.failures import redact_keys
from relayline.shared.providers.checks import ModelProblem
from relayline.shared.registry import AgentRegistry

#: seconds a web process keeps its last preflight for /readyz
PREFLIGHT_TTL: Final = 60.0


class ProblemJSON(TypedDict):
    agent: str
    code: str
    message: str


class PreflightJSON(TypedDict):
    """``/readyz``'s ``model``: ``warning`` with the problems, else ``ok``."""

    status: Literal["ok", "warning"]
    problems: list[ProblemJSON]


@dataclasses.dataclass(frozen=True)
class PreflightProblem:
    """One problem of one configured agent: the code its turns would fail with, and
    what to set."""

    agent: str
    code: FailureCode
    message: str

    def text(self) -> str:
        """The problem in one line: the agent, what to set, the code."""
        return f"agent '{self.agent}': {self.message} [{self.code}]"

    def line(self) -> str:
        """The line a person starting relayline reads on the terminal."""
        return f"relayline warning: {self.text()}"

    def to_json(self) -> ProblemJSON:
        return {"agent": self.agent, "code": self.code, "message": self.message}


def check_agents(registry: AgentRegistry) -> list[PreflightProblem]:
    """The problems of every agent ``registry`` names (none: all look usable)."""
    problems: list[PreflightProblem] = []
    for agent_id in registry.ids():
        try:
            spec = registry.spec(agent_id)
        except AgentUnavailableError as exc:
            problems.append(PreflightProblem(agent_id, "agent_unavailable", exc.message))
            continue
        found = _provider_problems(spec.provider)
        problems += [PreflightProblem(agent_id, p.code, redact_keys(p.message)) for p in found]
    return problems


def report(problems: list[PreflightProblem]) -> PreflightJSON:
    return {
        "status": "warning" if problems else "ok",
        "problems": [problem.to_json() for problem in problems],
    }


class CachedPreflight:
    """``check_agents`` at most every ``ttl`` seconds (what /readyz shows); one caller
    checks while the others wait for its answer."""

    def __init__(
        self,
        registry: AgentRegistry,
        ttl: float = PREFLIGHT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._registry = registry
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._last: tuple[float, list[PreflightProblem]] | None = None

    def problems(self) -> list[PreflightProblem]:
        with self._lock:
            now = self._clock()
            if self._last is None or now - self._last[0] >= self._ttl:
                self._last = (now, check_agents(self._registry))
            return list(self._last[1])


def _provider_problems(provider: object) -> list[ModelProblem]:
    """The provider's own ``preflight()``; a provider without one has nothing to check
    (the scripted one, an application's own)."""
    check = getattr(provider, "preflight", None)
    if not callable(check):
        return []
    try:
        found = check()
    except Exception as exc:  # a check that breaks must not hide the others
        return [ModelProblem("internal", f"the model check failed: {type(exc).__name__}: {exc}")]
    return [problem for problem in found if isinstance(problem, ModelProblem)]
