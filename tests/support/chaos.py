"""What the chaos suite (tests/chaos) shares: polling a condition to a deadline, and the
figures each scenario reports. A figure is printed at once (shown with ``-s``) and kept,
so that tests/chaos/conftest.py repeats every one in the terminal summary, where CI
output shows it even under ``-q``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

#: every figure reported in this session, in order
FIGURES: list[str] = []


def report(figure: str) -> None:
    line = f"CHAOS {figure}"
    print(line)
    FIGURES.append(line)


def until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a condition, bounded by the deadline


def seconds(samples: Sequence[float]) -> str:
    """``n=5 p50=3.1s max=4.0s``: the count, median and maximum of some durations."""
    return f"n={len(samples)} p50={statistics.median(samples):.1f}s max={max(samples):.1f}s"
