"""Protocol adapters: native chunks to the events a frontend protocol expects.

Kept as the public import path; each adapter lives in its protocol's package under
``shared.protocols``."""

from shared.protocols.adapter import StreamAdapter
from shared.protocols.agui import AGUIAdapter
from shared.protocols.native import NativeAdapter
from shared.protocols.vercel import VercelAIAdapter, ui_messages

__all__ = ["AGUIAdapter", "NativeAdapter", "StreamAdapter", "VercelAIAdapter", "ui_messages"]
