"""The agent: specs, tools, runs and continuations."""

from relayline.shared.agent.agent import Agent, Continuation
from relayline.shared.agent.spec import AgentSpec, RunState
from relayline.shared.tools import FrontendTool, Tool, tool

__all__ = ["Agent", "AgentSpec", "Continuation", "FrontendTool", "RunState", "Tool", "tool"]
