"""AG-UI (``@ag-ui/client``, CopilotKit): the event stream, the reload projection, the
``RunAgentInput`` translator, client tool catalogs and the snapshot seed."""

from relayline.shared.protocols.agui.adapter import AGUIAdapter
from relayline.shared.protocols.agui.hydrate import hydrate
from relayline.shared.protocols.agui.translator import AGUIInputTranslator

__all__ = ["AGUIAdapter", "AGUIInputTranslator", "hydrate"]
