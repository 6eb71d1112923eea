"""Model providers: the scripted provider for deterministic runs, every provider pydantic-ai
supports (``PydanticAIProvider``; pydantic-ai is an optional extra, imported on first use), and a
dependency-free OpenAI-compatible one."""

from relayline.shared.providers.base import (
    MetaDelta,
    ModelDelta,
    ModelRequest,
    Provider,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from relayline.shared.providers.openai import OpenAIProvider
from relayline.shared.providers.pydantic_ai import PydanticAIProvider
from relayline.shared.providers.scripted import ScriptedProvider
from relayline.shared.settings import Settings

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


def configured_provider(settings: Settings) -> Provider | None:
    """The provider RELAYLINE_MODEL selects: ``<provider>:<model>`` (a pydantic-ai model
    name) is PydanticAIProvider; a bare name is OpenAIProvider.from_settings (with
    OPENAI_BASE_URL and OPENAI_API_KEY); unset, None (the agent keeps its own)."""
    if not settings.model:
        return None
    if ":" in settings.model:
        return PydanticAIProvider.from_settings(settings)
    return OpenAIProvider.from_settings(settings)
