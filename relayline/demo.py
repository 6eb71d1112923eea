"""The default demo agent: a scripted model (or the one RELAYLINE_MODEL names), a backend
tool, an approval-gated tool and a frontend tool that reads the page."""

from __future__ import annotations

from pathlib import Path

from relayline import AgentSpec, FrontendTool, Settings, tool
from relayline.providers import ScriptedProvider, configured_provider


@tool
def get_weather(city: str) -> str:
    """Look up the current weather.

    Args:
        city: City name.
    """
    return f"sunny and 21 °C in {city}"


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (pretend: nothing is touched).

    Args:
        path: The file to delete.
    """
    return f"{path} deleted"


def build() -> AgentSpec:
    scripted = Path(__file__).with_name("demo_script.json")
    return AgentSpec(
        provider=configured_provider(Settings.from_env()) or ScriptedProvider.from_file(scripted),
        tools=[get_weather, delete_file],
        frontend_tools=[FrontendTool("read_title", "Read the title of the current page")],
        system_prompt="You help with the page.",
        # "Tell me a long story" streams slowly (demo_script.json): time to try Stop, or
        # a reload mid-answer.
        suggestions=[
            "What is the weather?",
            "What is the page title?",
            "Delete report.pdf",
            "Tell me a long story",
        ],
    )
