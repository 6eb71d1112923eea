"""Model providers: every model pydantic-ai supports (``PydanticAIProvider``, with the
``relayline[openai]``, ``[anthropic]``, ``[google]``... extras), a dependency-free
OpenAI-compatible client (``OpenAIProvider``: OpenAI, Ollama, vLLM...), and a scripted
model for demos and tests (``ScriptedProvider``). A provider of one's own implements
``Provider.stream``: it takes a ``ModelRequest`` and yields the deltas below."""

from __future__ import annotations

from relayline.shared.providers import (
    MetaDelta,
    ModelDelta,
    ModelRequest,
    OpenAIProvider,
    Provider,
    PydanticAIProvider,
    ReasoningDelta,
    ScriptedProvider,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
    configured_provider,
)

__all__ = [
    "MetaDelta",
    "ModelDelta",
    "ModelRequest",
    "OpenAIProvider",
    "Provider",
    "PydanticAIProvider",
    "ReasoningDelta",
    "ScriptedProvider",
    "TextDelta",
    "ToolCallDelta",
    "ToolSchema",
    "Usage",
    "configured_provider",
]
