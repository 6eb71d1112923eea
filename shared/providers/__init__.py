"""Model providers: the scripted provider for deterministic runs, and an OpenAI-compatible one."""

from shared.providers.base import (
    ModelDelta,
    ModelRequest,
    Provider,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from shared.providers.openai import OpenAIProvider
from shared.providers.scripted import ScriptedProvider

__all__ = [
    "ModelDelta",
    "ModelRequest",
    "OpenAIProvider",
    "Provider",
    "ReasoningDelta",
    "ScriptedProvider",
    "TextDelta",
    "ToolCallDelta",
    "ToolSchema",
    "Usage",
]
