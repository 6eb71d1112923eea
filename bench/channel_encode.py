"""Channel encoding cost, measured against baselines in the same run.

    .venv/bin/python bench/channel_encode.py

1. Envelope + batch encoding of 100,000 text-delta events through an AbstractChannel
   whose ``deliver`` only keeps the batch, against a bare ``json.dumps`` loop over the
   same events' envelope dicts (same output bytes, none of the channel's work), and
   against that loop with one reused encoder (as the channel does). Two shapes:
   unbudgeted, one envelope per delivery (RedisChannel), and Pusher-like batches of 10
   under 10,000-byte delivery and event budgets. Target: at most 2x.
2. Fragmenting one 1 MB tool result at a 10,000-byte budget. Target: under 50 ms.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from relayline.channels.base import AbstractChannel, CallbackChannel
from relayline.shared.events import ProtocolEvent

COUNT = 100_000
SEGMENT_ID = "3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0"


class Keep(AbstractChannel):
    """Delivers into a list: the cost measured is the channel's, not a transport's."""

    def __init__(self, **limits: int) -> None:
        super().__init__(**limits)
        self.batches: list[str] = []

    def deliver(self, batch: str) -> None:
        self.batches.append(batch)


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def bare(events: Sequence[ProtocolEvent]) -> None:
    for sequence, event in enumerate(events):
        envelope = {"streamId": SEGMENT_ID, "sequence": sequence, "type": event.type}
        envelope["data"] = event.data
        json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


REUSED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def bare_reused(events: Sequence[ProtocolEvent]) -> None:
    """The stricter baseline: the same loop without json.dumps's per-call encoder."""
    for sequence, event in enumerate(events):
        envelope = {"streamId": SEGMENT_ID, "sequence": sequence, "type": event.type}
        envelope["data"] = event.data
        REUSED.encode(envelope)


def through(make: Callable[[], AbstractChannel], events: Sequence[ProtocolEvent]) -> None:
    channel = make()
    for event in events:
        channel.send(event)


def main() -> None:
    events = [
        ProtocolEvent("text-delta", {"id": "text_4c2", "delta": f"tok{i} è "}) for i in range(COUNT)
    ]
    shapes: dict[str, Callable[[], AbstractChannel]] = {
        "1 per delivery, no budget  ": Keep,
        "10 per delivery, 10 kB     ": lambda: CallbackChannel(
            lambda batch: None, budget=10_000, event_budget=10_000, batch_size=10
        ),
    }
    runs: dict[str, Callable[[], object]] = {
        "bare": lambda: bare(events),
        "reused": lambda: bare_reused(events),
    }
    for label, make in shapes.items():
        runs[label] = lambda make=make: through(make, events)  # type: ignore[misc]
    bare(events[:2000])  # warm up
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(5):  # interleaved, so load from elsewhere hits every contender alike
        for label, run in runs.items():
            best[label] = min(best[label], timed(run))
    baseline, strict = best.pop("bare"), best.pop("reused")
    print(f"bare json.dumps of the envelopes : {baseline * 1000:8.1f} ms for {COUNT} events")
    print(f"  same with one reused encoder   : {strict * 1000:8.1f} ms")
    for label, ours in best.items():
        print(
            f"channel, {label}: {ours * 1000:8.1f} ms  ratio {ours / baseline:5.2f}x (<= 2x), "
            f"{ours / strict:5.2f}x the reused-encoder loop"
        )

    result = ProtocolEvent(
        "tool-result", {"callId": "call_1", "result": "Perugia è bella / 😀 " * 44_000}
    )
    size = len(json.dumps(result.data, ensure_ascii=False).encode())

    def fragment() -> int:
        channel = Keep(budget=10_000)
        channel.send(result)
        return len(channel.batches)

    parts = fragment()
    elapsed = min(timed(fragment) for _ in range(5))
    print(
        f"fragment {size / 1e6:.2f} MB at a 10,000-byte budget: {elapsed * 1000:6.1f} ms "
        f"({parts} fragments, target < 50 ms)"
    )


if __name__ == "__main__":
    main()
