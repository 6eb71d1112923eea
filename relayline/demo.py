"""The default demo agent: a scripted model, a backend tool, an approval-gated tool and a
frontend tool that reads the page."""

from __future__ import annotations

from pathlib import Path

from shared.agent import AgentSpec, FrontendTool, tool
from shared.providers import ScriptedProvider


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
    return AgentSpec(
        provider=ScriptedProvider.from_file(Path(__file__).with_name("demo_script.json")),
        tools=[get_weather, delete_file],
        frontend_tools=[FrontendTool("read_title", "Read the title of the current page")],
        system_prompt="You help with the page.",
        suggestions=["What is the weather?", "What is the page title?", "Delete report.pdf"],
    )
