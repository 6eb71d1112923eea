"""Agents whose turns fail as an operator's misconfiguration or a crashing tool makes them
fail, for the tests of failure reasons (tests/integration/test_failure_reasons.py).

``configured`` uses the model RELAYLINE_MODEL names (OPENAI_BASE_URL, OPENAI_API_KEY),
as the demo agent does: the tests point it at a local server speaking OpenAI's wire
format, or at a port nobody listens on. Its ``charge_card`` tool always raises and is
declared ``on_error="fail"``."""

from __future__ import annotations

from relayline.shared.agent import AgentSpec, tool
from relayline.shared.providers import configured_provider
from relayline.shared.settings import Settings

#: what charge_card's error says, with something shaped like a key (never shown)
CARD_ERROR = "the payment service refused the charge (token sk-live-0123456789abcdefXYZ)"


@tool(on_error="fail")
def charge_card(amount: int) -> str:
    """Charge the customer's card.

    Args:
        amount: Amount in cents.
    """
    raise RuntimeError(CARD_ERROR)


def configured() -> AgentSpec:
    provider = configured_provider(Settings.from_env())
    if provider is None:
        raise RuntimeError("Set RELAYLINE_MODEL for tests.support.failure_agents:configured.")
    return AgentSpec(provider=provider, tools=[charge_card], system_prompt="You take payments.")


def raising() -> AgentSpec:
    """A factory that raises: RELAYLINE_AGENTS names an agent that cannot be built."""
    raise RuntimeError("the factory fell over")
