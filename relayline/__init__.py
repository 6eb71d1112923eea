"""relayline: run AI agent turns in background workers and stream them to browser
frontends (AG-UI, the Vercel AI SDK, a native protocol).

The public API is what ``__all__`` lists here, plus ``relayline.providers`` (model
providers) and ``relayline.testing`` (what an application's own tests need)::

    from relayline import Agent, AgentSpec, FrontendTool, Relayline, Store, register, tool
    from relayline.providers import PydanticAIProvider

Everything else (``relayline.web``, ``relayline.worker``, ``relayline.channels``,
``relayline.shared`` and their modules) is internal and may change in any release.

Names are imported on first use: a worker that loads an agent never imports Flask's side,
and ``import relayline`` costs nothing until a name is asked for."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.3.0.dev0"

if TYPE_CHECKING:
    from relayline.channels.base import AbstractChannel, CallbackChannel
    from relayline.channels.envelope import Envelope
    from relayline.channels.mercure import MercureChannel
    from relayline.channels.pusher import PusherChannel
    from relayline.shared.agent import Agent, AgentSpec, Continuation, RunState
    from relayline.shared.errors import (
        AgentUnavailableError,
        ConflictError,
        DatabaseUnavailableError,
        DeliveryError,
        ExpiredError,
        FencedOutError,
        InputTranslationError,
        NoWorkerError,
        ProviderError,
        RelaylineError,
        RunElsewhereError,
        RunFailedError,
        RunInFlightError,
        RunNotWaitingError,
        StaleRunError,
        StepLimitError,
        StreamAdapterError,
        StreamLostError,
        ToolError,
        ToolFailedError,
        UnavailableError,
        WorkflowError,
    )
    from relayline.shared.persistence import Store
    from relayline.shared.settings import Settings
    from relayline.shared.stop_signal import StopSignal
    from relayline.shared.tools import FrontendTool, Tool, current_stop_signal, tool
    from relayline.web import create_app
    from relayline.web.extension import Relayline
    from relayline.worker.registration import register

#: public name -> the internal module that defines it
_HOMES: dict[str, str] = {
    # agents and tools
    "Agent": "relayline.shared.agent",
    "AgentSpec": "relayline.shared.agent",
    "Continuation": "relayline.shared.agent",
    "RunState": "relayline.shared.agent",
    "FrontendTool": "relayline.shared.tools",
    "Tool": "relayline.shared.tools",
    "StopSignal": "relayline.shared.stop_signal",
    "current_stop_signal": "relayline.shared.tools",
    "tool": "relayline.shared.tools",
    # embedding in a Flask and a Celery application
    "Relayline": "relayline.web.extension",
    "create_app": "relayline.web",
    "register": "relayline.worker.registration",
    # storage and configuration
    "Store": "relayline.shared.persistence",
    "Settings": "relayline.shared.settings",
    # push delivery
    "AbstractChannel": "relayline.channels.base",
    "CallbackChannel": "relayline.channels.base",
    "Envelope": "relayline.channels.envelope",
    "MercureChannel": "relayline.channels.mercure",
    "PusherChannel": "relayline.channels.pusher",
    # errors (relayline.shared.errors has the tree and the HTTP status of each)
    **{
        name: "relayline.shared.errors"
        for name in (
            "AgentUnavailableError",
            "ConflictError",
            "DatabaseUnavailableError",
            "DeliveryError",
            "ExpiredError",
            "FencedOutError",
            "InputTranslationError",
            "NoWorkerError",
            "ProviderError",
            "RelaylineError",
            "RunElsewhereError",
            "RunFailedError",
            "RunInFlightError",
            "RunNotWaitingError",
            "StaleRunError",
            "StepLimitError",
            "StreamAdapterError",
            "StreamLostError",
            "ToolError",
            "ToolFailedError",
            "UnavailableError",
            "WorkflowError",
        )
    },
}

__all__ = [
    "AbstractChannel",
    "Agent",
    "AgentSpec",
    "AgentUnavailableError",
    "CallbackChannel",
    "ConflictError",
    "Continuation",
    "DatabaseUnavailableError",
    "DeliveryError",
    "Envelope",
    "ExpiredError",
    "FencedOutError",
    "FrontendTool",
    "InputTranslationError",
    "MercureChannel",
    "NoWorkerError",
    "ProviderError",
    "PusherChannel",
    "Relayline",
    "RelaylineError",
    "RunElsewhereError",
    "RunFailedError",
    "RunInFlightError",
    "RunNotWaitingError",
    "RunState",
    "Settings",
    "StaleRunError",
    "StepLimitError",
    "StopSignal",
    "Store",
    "StreamAdapterError",
    "StreamLostError",
    "Tool",
    "ToolError",
    "ToolFailedError",
    "UnavailableError",
    "WorkflowError",
    "__version__",
    "create_app",
    "current_stop_signal",
    "register",
    "tool",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'relayline' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # asked once: later lookups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
