"""One segment of a run: admission, the loop's output through the adapter to the pull
consumer and the channel, and exactly one terminal
(docs/reference/neuron-streaming-spec.md section 1.1)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Generator, Iterable
from typing import Any

from relayline.shared.agent.loop import RunLoop
from relayline.shared.agent.spec import RunState
from relayline.shared.batch import request_from_record
from relayline.shared.chunks import InterruptEvent
from relayline.shared.delivery import Channel, GuardedChannel
from relayline.shared.errors import (
    ConflictError,
    FencedOutError,
    RelaylineError,
    RunFailedError,
)
from relayline.shared.events import ProtocolEvent
from relayline.shared.failures import failure_code
from relayline.shared.persistence.store import RunRecord, StopRequestedError
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.texts import RUN_FAILED

AdapterFactory = Callable[[], StreamAdapter]
ChannelFactory = Callable[[], Channel]


def state_of(record: RunRecord, message: str | None = None) -> RunState:
    return RunState(
        thread_id=record.thread_id,
        run_id=record.run_id,
        status=record.status,
        attempt=record.attempt,
        interrupt=request_from_record(record),
        message=message,
        error=record.error,
        error_code=failure_code(record.checkpoint.get("failure"), record.error),
    )


def run_segment(
    admit: Callable[[], tuple[RunLoop, bool]],
    adapter_factory: AdapterFactory | None,
    channel_factory: ChannelFactory | None,
    on_channel_error: Callable[[BaseException], None] | None = None,
) -> Generator[Any, None, RunState]:
    """Admit (raising before anything is yielded), then run the loop when ``admit``
    says there is work; a no-op continuation only repeats the current interrupt."""
    loop, has_work = admit()
    adapter = adapter_factory() if adapter_factory else None
    if adapter is not None:
        adapter.bind_run(loop.record.run_id)
    channel: GuardedChannel | None = None
    if channel_factory is not None:
        try:
            channel = GuardedChannel(channel_factory())
        except Exception as exc:  # an unbuildable channel must not strand the run
            logging.getLogger("relayline.channel").warning("channel factory failed: %s", exc)
            if on_channel_error is not None:
                with contextlib.suppress(Exception):
                    on_channel_error(exc)
    thread_id = loop.record.thread_id
    if channel is not None:
        # Before the first event: every write carries the attempt this segment holds.
        channel.fence(loop.record.attempt, took_over=loop.took_over)

    def out(events: Iterable[ProtocolEvent]) -> Generator[ProtocolEvent, None, None]:
        for event in events:
            yield event
            if channel is not None:
                channel.send(event)
                if channel.fenced is not None:
                    raise channel.fenced

    try:
        if adapter is not None:
            yield from out(adapter.start())
        if has_work:
            steps = loop.advance()
            while True:
                try:
                    item = next(steps)
                except StopIteration:
                    break
                if adapter is not None:
                    yield from out(adapter.transform(item))
                else:
                    yield item
    except GeneratorExit:
        # The consumer went away mid-segment: the run cannot finish here.
        _record_failure(loop, RunFailedError("The stream consumer disconnected."))
        raise
    except FencedOutError:
        raise  # another attempt owns the run: no failure recorded, no frame, no terminal
    except Exception as exc:
        taken = _taken_over(exc) or _record_failure(loop, exc)
        if taken is not None:
            # The run moved on under this writer (a recovery took it over): the same
            # quiet end as a log that refused our write, never "The run failed." for a
            # run that goes on elsewhere.
            raise FencedOutError(
                f"Run '{loop.record.run_id}' was taken over: {taken.message}",
                fence_reason=f"store refused attempt {loop.record.attempt}: {taken.message}",
            ) from exc
        if adapter is not None:
            yield from out(adapter.error(exc))
        if channel is not None:
            channel.failed(exc, thread_id)
        _report(channel, on_channel_error)
        message = exc.message if isinstance(exc, RelaylineError) else RUN_FAILED
        raise RunFailedError(message, cause=exc) from exc

    state = state_of(loop.record, loop.last_text)
    if state.status == "completed":
        if adapter is not None:
            yield from out(adapter.end())
        if channel is not None:
            channel.completed(state, thread_id)
    elif state.status == "cancelled":
        # The protocol's own "stopped" frames; for the transport the segment completed.
        if adapter is not None:
            yield from out(adapter.stopped())
        if channel is not None:
            channel.completed(state, thread_id)
    elif state.interrupt is not None:
        if adapter is not None:
            yield from out(adapter.interrupt(state.interrupt))
        else:
            yield InterruptEvent(state.interrupt)
        if channel is not None:
            channel.interrupted(state, thread_id)
    _report(channel, on_channel_error)
    return state


def _taken_over(exc: BaseException) -> ConflictError | None:
    """``exc`` when it says another writer changed the run (a stop's refusal aside)."""
    if isinstance(exc, ConflictError) and not isinstance(exc, StopRequestedError):
        return exc
    return None


def _record_failure(loop: RunLoop, exc: BaseException) -> ConflictError | None:
    """Record the run failed; the refusal when another process owns the run now (it
    decides the run's fate: nothing is written, and nothing must be said)."""
    try:
        loop.fail(exc)
    except ConflictError as refused:
        return refused
    return None


def _report(
    channel: GuardedChannel | None, listener: Callable[[BaseException], None] | None
) -> None:
    if channel is None or listener is None:
        return
    for error in channel.errors:
        try:
            listener(error)
        except Exception:  # a failing listener must not fail the run either
            logging.getLogger("relayline.agent").exception("channel error listener failed")


def drain(events: Generator[Any, None, RunState]) -> RunState:
    """Run a segment to its end; a failure becomes a failed RunState."""
    try:
        while True:
            next(events)
    except StopIteration as stop:
        result: RunState = stop.value
        return result
