"""The provider interface: one streamed model call.

A provider receives the conversation and the tool schemas and yields deltas as the
model produces them. The agent loop assembles the deltas into one assistant message,
so providers stay small and stateless.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from relayline.shared.messages import Message
from relayline.shared.stop_signal import StopSignal


@dataclasses.dataclass(frozen=True)
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ModelRequest:
    """One model call. ``stop_signal`` is set when the run is stopped: a provider blocked on
    the model's response registers ``stop_signal.on_stop`` to close it, so the call ends
    promptly (what it raises then is ignored; the loop sees the token)."""

    system_prompt: str | None
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...]
    stop_signal: StopSignal | None = None


@dataclasses.dataclass(frozen=True)
class TextDelta:
    text: str


@dataclasses.dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclasses.dataclass(frozen=True)
class ToolCallDelta:
    """A piece of one tool call. ``index`` groups the pieces of a call (parallel calls
    interleave); ``id`` and ``name`` arrive at least once, ``arguments`` is a raw
    fragment of the call's JSON arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclasses.dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclasses.dataclass(frozen=True)
class MetaDelta:
    """Provider state kept in the assistant message's ``meta`` under ``key`` (JSON), for
    the provider to send back with the message later (a thinking block's signature)."""

    key: str
    value: Any


ModelDelta = TextDelta | ReasoningDelta | ToolCallDelta | Usage | MetaDelta


@runtime_checkable
class Provider(Protocol):
    def stream(self, request: ModelRequest) -> Iterator[ModelDelta]:
        """Yield the model's deltas. Raise :class:`~relayline.shared.errors.ProviderError` on
        failure."""
        ...
