"""Protocol adapters: native chunks to the events a frontend protocol expects.

Kept as the public import path; each adapter lives in its protocol's package under
``relayline.shared.protocols``."""

from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.protocols.vercel import VercelAIAdapter, ui_messages

__all__ = ["AGUIAdapter", "NativeAdapter", "StreamAdapter", "VercelAIAdapter", "ui_messages"]
