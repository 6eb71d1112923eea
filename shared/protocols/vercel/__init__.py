"""The Vercel AI SDK UI message stream (``useChat``): the chunk stream, the
``UIMessage[]`` reload projection and the message-history translator."""

from relayline.shared.protocols.vercel.adapter import VercelAIAdapter
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator
from relayline.shared.protocols.vercel.ui_messages import ui_messages

__all__ = ["VercelAIAdapter", "VercelAIInputTranslator", "ui_messages"]
