"""The channel seam: where a segment's protocol events and lifecycle are pushed.

The agent streams each segment to its pull consumer (the SSE response) and, when a
channel factory is set (``Agent.set_channel``), to a *channel* too: the segment's log in
Redis for the relay (``LogOnlyChannel`` joined to a ``SegmentLog``: the web that took the
request reads the log from its start, and so can any later resume), Pusher or Mercure
for browsers (their channels write the same log), or anything implementing the
``Channel`` protocol below.
The core only knows this protocol, so ``shared`` never imports a transport.

The contract
------------

- **One instance per segment.** The factory is called once per segment (a turn, or
  each resume after an interruption); the channel never outlives it.
- **Sends, then exactly one terminal.** ``send(event)`` gets every adapted event in the
  order the pull consumer gets it (the same instances). Then exactly one of
  ``completed(state, workflow_id)`` (the run finished), ``interrupted(state,
  workflow_id)`` (it waits for the client: approvals, frontend tool results) or
  ``failed(error, workflow_id)`` (it failed; ``error`` is the original exception, for
  logging, never for the wire). A segment cut short (its pull consumer disconnected)
  sends no terminal: the run is recorded failed and the channel dropped.
- **A channel error never fails the run.** The agent wraps every channel in
  ``GuardedChannel``: an exception from any call is logged, kept and handed to
  ``Agent.on_channel_error``; the run and the pull stream go on.
- **Fenced writers stop.** A channel may also implement ``fence(epoch, *, took_over)``
  (``Fenceable``): the agent calls it once the run is admitted, before the first
  event, with the run's attempt. When a newer attempt took the run over, the channel
  raises ``FencedOutError`` (its log refused the write): the segment then ends quietly,
  with no failure frame and no terminal, since the taker owns the run now.
- **Calls are synchronous**, on the thread running the segment: a slow channel slows the
  run, so transports bound their own I/O.

``workflow_id`` names the durable workflow the segment belongs to (today the thread id);
``state`` is the ``RunState`` the segment ended in. A channel that frames events for the
wire (envelopes, sequences, fragments) derives from ``relayline.channels.AbstractChannel``; a
minimal channel implements the four methods directly::

    class PrintChannel:
        def send(self, event: ProtocolEvent) -> None:
            print(event.type, event.data)

        def completed(self, state: RunState, workflow_id: str) -> None:
            print("done", workflow_id)

        def interrupted(self, state: RunState, workflow_id: str) -> None:
            print("waiting", workflow_id, state.interrupt)

        def failed(self, error: BaseException, workflow_id: str) -> None:
            print("failed", workflow_id)

    agent.set_channel(PrintChannel)

Implementations in ``channels``: ``LogOnlyChannel`` (the relay), ``PusherChannel``,
``MercureChannel``, ``CallbackChannel`` (deliveries to a function), ``NullChannel``
(drops everything), and for tests ``relayline.channels.testing.MemoryChannel`` (keeps
its envelopes) and ``FakeChannel`` (records the calls).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from relayline.shared.errors import FencedOutError
from relayline.shared.events import ProtocolEvent
from relayline.shared.run_state import RunState

logger = logging.getLogger("relayline.channel")


@runtime_checkable
class Channel(Protocol):
    """Receives one segment: ``send`` calls, then exactly one terminal (see above)."""

    def send(self, event: ProtocolEvent) -> None: ...

    def completed(self, state: RunState, workflow_id: str) -> None: ...

    def interrupted(self, state: RunState, workflow_id: str) -> None: ...

    def failed(self, error: BaseException, workflow_id: str) -> None: ...


@runtime_checkable
class Fenceable(Protocol):
    """A channel whose writes carry the run's attempt (``AbstractChannel``)."""

    def fence(self, epoch: int, *, took_over: bool) -> None: ...


class GuardedChannel:
    """Calls a channel so that its errors never fail the run: each is logged and kept
    in ``errors`` (the segment hands them to ``Agent.on_channel_error``)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.errors: list[BaseException] = []
        #: set when the channel refused a write because a newer attempt took the run over
        self.fenced: FencedOutError | None = None

    def _guard(self, operation: str, call: Callable[..., object], *args: object) -> None:
        try:
            call(*args)
        except FencedOutError as exc:  # not the channel's failure: the segment stops
            self.fenced = self.fenced or exc
        except Exception as exc:
            self.errors.append(exc)
            logger.warning("channel %s failed: %s", operation, exc, exc_info=exc)

    def fence(self, epoch: int, *, took_over: bool) -> None:
        """Tell a ``Fenceable`` channel the run's attempt (else nothing)."""
        channel = self.channel
        if isinstance(channel, Fenceable):
            self._guard("fence", functools.partial(channel.fence, took_over=took_over), epoch)

    def send(self, event: ProtocolEvent) -> None:
        self._guard("send", self.channel.send, event)

    def completed(self, state: RunState, workflow_id: str) -> None:
        self._guard("completed", self.channel.completed, state, workflow_id)

    def interrupted(self, state: RunState, workflow_id: str) -> None:
        self._guard("interrupted", self.channel.interrupted, state, workflow_id)

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self._guard("failed", self.channel.failed, error, workflow_id)
