"""An agent module that cannot be imported (an SDK its author forgot to install): what
RELAYLINE_AGENT names in the tests of ``agent_unavailable``."""

from __future__ import annotations

import an_sdk_nobody_installed  # type: ignore[import-not-found]  # noqa: F401

from relayline.shared.agent import AgentSpec


def spec() -> AgentSpec:  # pragma: no cover - never reached: the import fails
    raise AssertionError("unreachable")
