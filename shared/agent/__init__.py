"""The agent: specs, tools, runs and continuations."""

from shared.agent.agent import Agent, Continuation
from shared.agent.spec import AgentSpec, RunState
from shared.tools import FrontendTool, Tool, tool

__all__ = ["Agent", "AgentSpec", "Continuation", "FrontendTool", "RunState", "Tool", "tool"]
