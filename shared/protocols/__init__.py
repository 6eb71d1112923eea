"""One package per frontend protocol (``agui``, ``vercel``, ``native``), each holding its
stream adapter, reload projection, input translator and wire helpers, chosen by name
through one table (``registry``). ``adapter`` and ``translator`` are the two contracts
every protocol implements; ``rules`` holds what their translators share."""

from relayline.shared.protocols.registry import (
    PROTOCOLS,
    REGISTRY,
    ProtocolEntry,
    adapter_factory,
    failure_frames,
    protocol,
)

__all__ = [
    "PROTOCOLS",
    "REGISTRY",
    "ProtocolEntry",
    "adapter_factory",
    "failure_frames",
    "protocol",
]
