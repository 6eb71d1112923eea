"""What an agent is (AgentSpec) and where a run ended up (RunState, re-exported from
``relayline.shared.run_state``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from relayline.shared.providers.base import Provider
from relayline.shared.run_state import RunState
from relayline.shared.tools import AnyTool, FrontendTool, Tool

MultitaskStrategy = Literal["reject", "interrupt", "enqueue"]
MULTITASK_STRATEGIES: tuple[MultitaskStrategy, ...] = ("reject", "interrupt", "enqueue")
#: what a relayed client that goes away does to its run (``?onDisconnect=``)
DisconnectPolicy = Literal["continue", "cancel"]
DISCONNECT_POLICIES: tuple[DisconnectPolicy, ...] = ("continue", "cancel")


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """Everything needed to rebuild an agent in any process.

    ``max_steps`` bounds model calls per turn; ``frontend_wait_timeout`` (seconds or
    None) is the deadline of a wait for frontend tool results."""

    provider: Provider
    tools: Sequence[Tool] = ()
    frontend_tools: Sequence[FrontendTool] = ()
    system_prompt: str | None = None
    suggestions: Sequence[str] = ()
    max_steps: int = 10
    frontend_wait_timeout: float | None = None
    #: a new turn while a run holds the thread (double texting): refused with 409,
    #: ``interrupt`` (stop the run, then start), or ``enqueue`` (start when it ends);
    #: a request's ``?multitask=`` overrides it
    multitask: MultitaskStrategy = "reject"
    #: a relayed client that drops its request: ``continue`` (the run goes on, so a
    #: reload can resume it) or ``cancel`` (the run stops, for clients that cannot
    #: resume and whose Stop only aborts the request); ``?onDisconnect=`` overrides it
    on_disconnect: DisconnectPolicy = "continue"

    def __post_init__(self) -> None:
        if self.on_disconnect not in DISCONNECT_POLICIES:
            raise ValueError(
                f"AgentSpec.on_disconnect must be one of {', '.join(DISCONNECT_POLICIES)}."
            )
        if self.multitask not in MULTITASK_STRATEGIES:
            raise ValueError(
                f"AgentSpec.multitask must be one of {', '.join(MULTITASK_STRATEGIES)}."
            )
        if self.max_steps < 1:
            raise ValueError("AgentSpec.max_steps must be at least 1.")
        if self.frontend_wait_timeout is not None and self.frontend_wait_timeout <= 0:
            raise ValueError("AgentSpec.frontend_wait_timeout must be positive or None.")
        names = [t.name for t in self.tools] + [t.name for t in self.frontend_tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"AgentSpec declares tool names more than once: {duplicates}.")
        if not all(isinstance(item, Tool) for item in self.tools):
            raise TypeError("AgentSpec.tools takes @tool functions (Tool objects).")
        if not all(isinstance(item, FrontendTool) for item in self.frontend_tools):
            raise TypeError("AgentSpec.frontend_tools takes FrontendTool declarations.")

    def tool_map(self, extra: Sequence[FrontendTool] = ()) -> dict[str, AnyTool]:
        # The server's declarations win: a client catalog may add tools, never lift an
        # approval gate by declaring a tool again.
        found: dict[str, AnyTool] = {t.name: t for t in extra}
        found.update({t.name: t for t in self.frontend_tools})
        found.update({t.name: t for t in self.tools})
        return found


__all__ = ["AgentSpec", "RunState"]
