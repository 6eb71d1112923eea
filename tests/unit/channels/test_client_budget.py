"""The byte budget of a relayed client (channels.stream.reader.Subscription): a client
over its budget is dropped only once it took nothing for STALL_SECONDS; a dropped
subscription reads nothing more, calls ``on_overflow`` once and ends its queue with
ClientTooSlowError."""

from __future__ import annotations

import time

import pytest

from relayline.channels.errors import ClientTooSlowError
from relayline.channels.stream.reader import STALL_SECONDS, LogMultiplexer, Subscription


class _NoRedis:
    """A multiplexer never started: the subscription's own rules need no Redis."""


def _subscription(budget: int, dropped: list[str]) -> Subscription:
    mux = LogMultiplexer(_NoRedis())  # type: ignore[arg-type]
    return Subscription(
        mux, "seg_x", -1, None, budget=budget, on_overflow=lambda: dropped.append("x")
    )


def test_a_client_over_its_budget_that_still_reads_is_kept() -> None:
    dropped: list[str] = []
    sub = _subscription(100, dropped)
    sub._deliver(["a" * 150])  # one large read landing at once
    assert sub.unsent == 150 and not sub.dropped and dropped == []


def test_a_stalled_client_over_its_budget_is_dropped_once() -> None:
    dropped: list[str] = []
    sub = _subscription(100, dropped)
    sub._deliver(["a" * 60])
    sub._check_budget(time.monotonic() + STALL_SECONDS)
    assert not sub.dropped  # under the budget: however long it waits
    sub._deliver(["b" * 60])
    sub._check_budget(time.monotonic() + STALL_SECONDS)
    assert sub.dropped and dropped == ["x"]
    sub._deliver(["c" * 60])  # nothing more is queued for it
    sub._check_budget(time.monotonic() + 2 * STALL_SECONDS)
    assert dropped == ["x"] and sub.unsent == 120
    with pytest.raises(ClientTooSlowError):
        sub._take(time.monotonic() + 1)


def test_what_the_response_is_writing_counts_until_written() -> None:
    dropped: list[str] = []
    sub = _subscription(100, dropped)
    sub._deliver(["a" * 80])
    assert sub._take(time.monotonic() + 1) == ["a" * 80]
    sub.sending(80)
    sub._deliver(["b" * 40])  # 80 being written + 40 queued
    sub._check_budget(time.monotonic() + STALL_SECONDS)
    assert sub.dropped
