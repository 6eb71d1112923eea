"""``UIMessage`` shapes of the Vercel AI SDK (``ai`` 7), as ``GET /api/chat/<id>`` returns
them and ``useChat`` reads them: the subset of part fields relayline produces."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from relayline.shared.jsonutil import JSONObject


class ApprovalJSON(TypedDict):
    """A tool part's ``approval``: requested (``id`` only, maybe a reason) or answered."""

    id: str
    approved: NotRequired[bool]
    reason: NotRequired[str]
    requestReason: NotRequired[str]


class UIPartJSON(TypedDict, total=False):
    """One part of a UI message: ``text``, ``reasoning``, ``step-start`` or
    ``tool-<name>`` (a call, with its ``state`` and whatever that state carries)."""

    type: str
    id: str
    text: str
    state: str
    toolCallId: str
    input: JSONObject
    output: Any
    errorText: str
    approval: ApprovalJSON


#: why a call of a turn never finished
UnfinishedCall = Literal["stopped", "interrupted"]


class UIMessageMetadataJSON(TypedDict, total=False):
    #: a person stopped the answer before it finished (what it holds is partial)
    stopped: bool
    #: calls of the turn that never finished, by call id: ``stopped`` by a person,
    #: ``interrupted`` by the run's end (their ``output-error`` text is the model's)
    unfinishedCalls: dict[str, UnfinishedCall]


class UIMessageJSON(TypedDict):
    id: str
    role: Literal["user", "assistant", "system"]
    parts: list[UIPartJSON]
    metadata: NotRequired[UIMessageMetadataJSON]
