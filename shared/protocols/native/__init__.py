"""relayline's own vocabulary: one event per chunk (its continuations are native
answer maps, so it needs no translator)."""

from relayline.shared.protocols.native.adapter import NativeAdapter

__all__ = ["NativeAdapter"]
