"""AbstractChannel: the envelope, fragmentation, batching and failure policy every push
transport shares (docs/reference/neuron-streaming-spec.md sections 2.4, 2.5), and
CallbackChannel, the smallest one.

A transport implements ``deliver(batch)`` and overrides only the hooks it needs:

=====================  ==============================  ======================================
hook                   default                         role
=====================  ==============================  ======================================
``deliver(batch)``     required                        transmit one batch; raise on failure
``encode(type, env)``  the envelope                    wrap one envelope for the transport
``batch(items)``       concatenation                   combine encoded items, wrapper included
``batch_bytes(items)`` UTF-8 length of ``batch``       size of the real request (or a bound)
``budget()``           constructor ``budget``          max delivery bytes, wrapper included
``event_budget()``     constructor ``event_budget``    max envelope bytes before ``encode``
``batch_size()``       constructor ``batch_size``      max items per delivery
=====================  ==============================  ======================================

Measurement hooks must be deterministic, free of I/O and grow with part length.
One instance serves one segment: build a fresh channel (and so a fresh streamId) each time.
"""

from __future__ import annotations

import logging
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, Self

from relayline.channels.envelope import (
    COMPLETED,
    FAILED,
    FRAGMENT,
    INTERRUPTED,
    TERMINALS,
    encode_envelope,
    encode_json,
    terminal_data,
    utf8_len,
)
from relayline.channels.errors import (
    ChannelClosedError,
    ChannelConfigError,
    ChannelLimitError,
    EnvelopeError,
)
from relayline.channels.fragments import fragment_envelopes
from relayline.channels.stream.log import SegmentLog
from relayline.shared.errors import FencedOutError
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import SEGMENT_ID, new_segment_id

logger = logging.getLogger("relayline.channel")


class SegmentState(Protocol):
    """The agent's ``RunState`` as a channel sees it. No channel here reads it (the
    workflow id comes as its own argument); applications' channels may."""

    @property
    def thread_id(self) -> str: ...


def check_limits(batch_size: int, budget: int | None, event_budget: int | None) -> None:
    """Refuse limits no delivery could satisfy, before anything is sent."""
    if (
        batch_size < 1
        or (budget is not None and budget < 1)
        or (event_budget is not None and event_budget < 1)
    ):
        raise ChannelConfigError("Channel batch size and byte limits must be positive.")


class AbstractChannel(ABC):
    """Envelopes, fragments and batches a segment's events for one transport.

    Failure policy: the first failed delivery loses its batch (never retried) and stops
    data delivery; later ``send`` calls are no-ops. A terminal first flushes what is
    pending, then is attempted once even when stopped, with the next sequence, so the
    consumer sees the gap. Every error is raised to the caller (the agent guards channel
    calls) and kept in ``errors``.
    """

    def __init__(
        self, *, budget: int | None = None, event_budget: int | None = None, batch_size: int = 1
    ) -> None:
        check_limits(batch_size, budget, event_budget)
        self._budget = budget
        self._event_budget = event_budget
        self._batch_size = batch_size
        self._segment_id: str | None = None
        self._sequence = 0
        self._queue: list[str] = []
        self._checked = False
        #: set by the first failed delivery: data is dropped from then on
        self.stopped = False
        #: set by the terminal: the instance has served its segment
        self.ended = False
        #: every error this channel raised, in order
        self.errors: list[Exception] = []
        #: the segment's durable log, which gets every envelope too (``into_segment``)
        self.log: SegmentLog | None = None
        #: set when the log refused an append because another attempt took the run over:
        #: nothing more is delivered, terminal included, on any transport
        self.fenced: FencedOutError | None = None

    def into_segment(self, segment_id: str, log: SegmentLog | None = None) -> Self:
        """Serve the segment ``segment_id`` (the id the web announced for it) and write
        every envelope, terminal included, to ``log`` as well. Before the first event."""
        if self._segment_id is not None:
            raise ChannelConfigError("A channel joins its segment before its first event.")
        if not SEGMENT_ID.fullmatch(segment_id):
            raise ChannelConfigError(f"Invalid stream id {segment_id!r}: 32 lowercase hex.")
        self._segment_id = segment_id
        self.log = log
        return self

    def fence(self, epoch: int, *, took_over: bool) -> None:
        """The segment's writer holds attempt ``epoch`` of its run (the agent calls this
        once the run is admitted, before the first event); ``took_over``: it took the
        run over from a lost writer, whose segment is fenced and told (``take_over``)."""
        if self.log is None:
            return
        if took_over:
            self.log.take_over(epoch)
        else:
            self.log.epoch = epoch

    # hooks -----------------------------------------------------------------------

    @abstractmethod
    def deliver(self, batch: str) -> None:
        """Transmit one batch; raise on failure (the batch is then lost)."""

    def encode(self, type: str, envelope: str) -> str:
        return envelope

    def batch(self, items: Sequence[str]) -> str:
        return "".join(items)

    def batch_bytes(self, items: Sequence[str]) -> int:
        return utf8_len(self.batch(items))

    def budget(self) -> int | None:
        return self._budget

    def event_budget(self) -> int | None:
        return self._event_budget

    def batch_size(self) -> int:
        return self._batch_size

    # the Channel protocol ----------------------------------------------------------

    @property
    def segment_id(self) -> str:
        """The segment's id, drawn on first use and fixed for this instance."""
        if self._segment_id is None:
            self._segment_id = new_segment_id()
        return self._segment_id

    @property
    def sequence(self) -> int:
        """The sequence the next logical event will get."""
        return self._sequence

    def send(self, event: ProtocolEvent) -> None:
        if self.fenced is not None:
            raise self.fenced
        try:
            self._open()
            if self.stopped:
                return
            if not event.type or event.type.startswith("stream."):
                raise EnvelopeError(f"Event type {event.type!r} is reserved for channel frames.")
            self._queue_items(self._frames(event.type, event.data))
        except Exception as exc:
            self.errors.append(exc)
            raise

    def completed(self, state: SegmentState, workflow_id: str) -> None:
        self._terminal(COMPLETED, workflow_id)

    def interrupted(self, state: SegmentState, workflow_id: str) -> None:
        self._terminal(INTERRUPTED, workflow_id)

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self._terminal(FAILED, workflow_id)

    # internals -----------------------------------------------------------------------

    def _open(self) -> None:
        if self.ended:
            raise ChannelClosedError(
                "This channel already sent its terminal; build a new channel per segment."
            )
        if not self._checked:  # hooks may be overridden: check what they really return
            check_limits(self.batch_size(), self.budget(), self.event_budget())
            self._checked = True

    def _terminal(self, event_type: str, workflow_id: str) -> None:
        if self.fenced is not None:
            raise self.fenced  # the run is another writer's: no terminal of ours anywhere
        try:
            self._open()
        except Exception as exc:
            self.errors.append(exc)
            raise
        self.ended = True
        failures: list[Exception] = []
        try:
            self._flush()
        except Exception as exc:
            failures.append(exc)
        try:  # attempted once even when stopped: the consumer must learn the end
            self._queue_items(self._frames(event_type, terminal_data(workflow_id)))
            self._flush()
        except Exception as exc:
            failures.append(exc)
        self.errors.extend(failures)
        if failures:
            raise failures[0]

    def _frames(self, event_type: str, data: Any) -> list[str]:
        """Encoded items for one logical event: the whole envelope, or its fragments.
        The sequence is taken first, so an event that cannot be framed leaves a gap."""
        sequence = self._sequence
        self._sequence += 1
        data_json = encode_json(data)  # the only serialisation of the payload
        envelope = encode_envelope(self.segment_id, sequence, event_type, data_json)
        if self.log is not None:
            self._append_to_log(envelope, event_type in TERMINALS)
        item = self.encode(event_type, envelope)
        budget, event_budget = self.budget(), self.event_budget()
        if budget is None and event_budget is None:
            return [item]
        if self._room(envelope, item, budget, event_budget) >= 0:
            return [item]

        def room(envelope: str, item: str) -> int:
            return self._room(envelope, item, budget, event_budget)

        fragments = fragment_envelopes(
            self.segment_id,
            sequence,
            event_type,
            data_json,
            lambda envelope: room(envelope, self.encode(FRAGMENT, envelope)),
        )
        items = []
        for envelope in fragments:
            item = self.encode(FRAGMENT, envelope)
            if room(envelope, item) < 0:
                raise ChannelLimitError(
                    "Transport encoding exceeds the channel fragment byte limits."
                )
            items.append(item)
        return items

    def _append_to_log(self, envelope: str, terminal: bool) -> None:
        assert self.log is not None  # called only with a log
        try:
            self.log.append(envelope, terminal=terminal)
        except FencedOutError as exc:
            # Another attempt owns the run: this segment is over for every transport.
            self.fenced = exc
            self.stopped = True
            self.log = None
            raise
        except Exception as exc:
            # The transport still delivers. The log stops here: past a gap it could not
            # serve a reader anyway, and an unreachable Redis would cost a timeout per
            # event. The thread's pointer then lapses with the segment's age cap.
            self.errors.append(exc)
            self.log = None
            logger.warning("segment log append failed; logging stops: %s", exc, exc_info=exc)

    def _room(self, envelope: str, item: str, budget: int | None, event_budget: int | None) -> int:
        """Bytes left under the tightest limit for an envelope and its encoded item."""
        left = budget - self.batch_bytes([item]) if budget is not None else sys.maxsize
        if event_budget is not None:
            left = min(left, event_budget - utf8_len(envelope))
        return left

    def _queue_items(self, items: list[str]) -> None:
        for item in items:
            budget = self.budget()
            if (
                self._queue
                and budget is not None
                and self.batch_bytes([*self._queue, item]) > budget
            ):
                self._flush()
            self._queue.append(item)
            if len(self._queue) >= self.batch_size():
                self._flush()

    def _flush(self) -> None:
        if not self._queue:
            return
        items, self._queue = self._queue, []
        try:
            self.deliver(self.batch(items))
        except Exception:
            self.stopped = True
            raise


class CallbackChannel(AbstractChannel):
    """Hands each delivery to ``callback`` as the text of a JSON array of envelopes
    (one Mercure-style update), e.g. to forward over a websocket or into a test."""

    def __init__(
        self,
        callback: Callable[[str], object],
        *,
        budget: int | None = None,
        event_budget: int | None = None,
        batch_size: int = 1,
    ) -> None:
        super().__init__(budget=budget, event_budget=event_budget, batch_size=batch_size)
        self.callback = callback

    def deliver(self, batch: str) -> None:
        self.callback(batch)

    def batch(self, items: Sequence[str]) -> str:
        return "[" + ",".join(items) + "]"

    def batch_bytes(self, items: Sequence[str]) -> int:
        return utf8_len(",".join(items)) + 2
