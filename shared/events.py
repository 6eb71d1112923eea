"""Protocol events (what adapters emit) and portable stream events (what any adapter encodes)."""

from __future__ import annotations

import dataclasses
from typing import Any

from relayline.shared.jsonutil import JSONObject


@dataclasses.dataclass(frozen=True)
class ProtocolEvent:
    """One event of a frontend protocol. Its JSON form is ``{"type": type, **data}``."""

    type: str
    #: the event's fields, shaped by its protocol (AG-UI, Vercel or native)
    data: JSONObject = dataclasses.field(default_factory=dict)

    def to_json(self) -> JSONObject:
        # Type first, data spread beside it (adapters keep "type" out of data).
        return {"type": self.type, **self.data}


class StreamEvent:
    """Marker base of portable events: every adapter knows how to encode them."""


@dataclasses.dataclass(frozen=True)
class StepStarted(StreamEvent):
    name: str
    metadata: JSONObject = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class StepFinished(StreamEvent):
    name: str
    metadata: JSONObject = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Activity(StreamEvent):
    """Live activity, e.g. a backend tool running: ``data`` is a JSON object."""

    id: str
    activity_type: str
    data: JSONObject = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Custom(StreamEvent):
    name: str
    value: Any = None


@dataclasses.dataclass(frozen=True)
class RunUsage:
    """The run's tokens so far (``{"input": n, "output": n}``), yielded by the loop after
    each model call that reported usage. Not a portable event: adapters drop it, except
    the native one, whose terminal frame carries it."""

    usage: JSONObject
