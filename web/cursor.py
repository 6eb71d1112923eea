"""The native stream's cursor: which segment a client has read, and how far.

Relayed and resumed native frames carry ``id: <segment>:<sequence>``, which
EventSource sends back by itself as ``Last-Event-ID`` (and a client may send as
``?after=``). Naming the segment is what keeps a resume exact across a takeover: after
a worker is lost, the run goes on in a new segment whose sequences start again at 0,
and a bare position read against that segment would skip the start of the recovered
answer. A bare ``<sequence>`` (what relayline sent before 0.3) still means "in the
thread's newest segment"."""

from __future__ import annotations

import dataclasses
import re

from werkzeug.exceptions import BadRequest

from relayline.shared.ids import SEGMENT_ID_PATTERN

_CURSOR = re.compile(
    rf"(?:(?P<segment>{SEGMENT_ID_PATTERN}):)?(?P<sequence>-1|0|[1-9][0-9]{{0,17}})"
)


@dataclasses.dataclass(frozen=True)
class Cursor:
    """The last frame a client has: ``sequence`` in ``segment_id`` (None: the
    thread's newest segment, for a bare sequence); -1 for none yet."""

    segment_id: str | None
    sequence: int

    @classmethod
    def parse(cls, raw: str) -> Cursor:
        """Raises BadRequest for anything but ``<sequence>`` or ``<segment>:<sequence>``."""
        found = _CURSOR.fullmatch(raw)
        if found is None:
            raise BadRequest(
                "The cursor (Last-Event-ID or 'after') must be '<sequence>' or "
                "'<stream id>:<sequence>', as the stream's 'id:' lines give it."
            )
        return cls(found.group("segment"), int(found.group("sequence")))


#: no cursor: the newest segment from its start
START = Cursor(None, -1)


def frame_id(segment_id: str, sequence: int) -> str:
    """The ``id:`` of a native frame: the cursor a client resumes from after it."""
    return f"{segment_id}:{sequence}"
