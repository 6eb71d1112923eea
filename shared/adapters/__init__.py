"""Protocol adapters: native chunks to the events a frontend protocol expects."""

from shared.adapters.base import StreamAdapter
from shared.adapters.native import NativeAdapter

__all__ = ["NativeAdapter", "StreamAdapter"]
