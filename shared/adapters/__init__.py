"""Protocol adapters: native chunks to the events a frontend protocol expects."""

from shared.adapters.agui import AGUIAdapter
from shared.adapters.base import StreamAdapter
from shared.adapters.native import NativeAdapter
from shared.adapters.ui_messages import ui_messages
from shared.adapters.vercel import VercelAIAdapter

__all__ = ["AGUIAdapter", "NativeAdapter", "StreamAdapter", "VercelAIAdapter", "ui_messages"]
