"""The poison-job bounds the worker's main process applies (worker.guard, worker.task_messages)."""

from __future__ import annotations

from typing import Any

from relayline.shared.jsonutil import depth
from relayline.worker.dead_letter import Refusal
from relayline.worker.task_messages import MAX_BODY_BYTES, MAX_DEPTH, bounds_refusal


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def test_depth_counts_containers_without_recursing() -> None:
    assert depth(1, 10) == 0
    assert depth([1, {"a": [2]}], 10) == 3
    assert depth(_nested(100_000), 10) == 11  # stops just past the limit, no RecursionError


def test_a_job_from_a_bounded_request_passes_and_a_deeper_one_is_refused() -> None:
    state = _nested(64)
    job = {"job": {"seed": {"state": state, "messages": [{"content": _nested(60)}]}}}
    assert bounds_refusal(1000, [], job) is None
    deep = {"job": {"seed": {"state": _nested(500)}}}
    assert bounds_refusal(1000, [], deep) == Refusal(
        "too-deep", f"nesting depth exceeds {MAX_DEPTH}"
    )
    too_large = bounds_refusal(MAX_BODY_BYTES + 1, [], {})
    assert too_large is not None and too_large.code == "too-large"
