"""Protocol payloads to native continuation maps
(docs/reference/neuron-streaming-spec.md section 6).

``AGUIInputTranslator`` reads AG-UI ``RunAgentInput`` (``resume`` or tool messages)
and the client tool catalog; ``VercelAIInputTranslator`` reads ``useChat`` message
histories. Both raise InputTranslationError (400) for malformed or unmatched input
and let the request's WorkflowError (409) through.
"""

from relayline.shared.protocols.agui.translator import AGUIInputTranslator
from relayline.shared.protocols.translator import InputTranslator
from relayline.shared.protocols.vercel.translator import VercelAIInputTranslator

__all__ = ["AGUIInputTranslator", "InputTranslator", "VercelAIInputTranslator"]
