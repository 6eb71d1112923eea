"""AG-UI (``@ag-ui/client``, CopilotKit): the event stream, the reload projection, the
``RunAgentInput`` translator, client tool catalogs and the snapshot seed."""

from shared.protocols.agui.adapter import AGUIAdapter
from shared.protocols.agui.hydrate import hydrate
from shared.protocols.agui.translator import AGUIInputTranslator

__all__ = ["AGUIAdapter", "AGUIInputTranslator", "hydrate"]
