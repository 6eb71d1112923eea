"""Helpers the channel unit tests share: an in-memory transport with failure injection."""

from __future__ import annotations

import dataclasses
from typing import Any

from relayline.channels.base import AbstractChannel
from relayline.channels.envelope import Envelope

SEGMENT_ID = "3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0"


@dataclasses.dataclass(frozen=True)
class State:
    """The part of RunState a channel reads."""

    thread_id: str


class Memory(AbstractChannel):
    """Keeps every delivery; ``fail_on`` lists 1-based delivery attempts that raise.
    Items are plain concatenated envelopes unless ``array`` wraps them as a JSON array."""

    def __init__(
        self,
        *,
        budget: int | None = None,
        event_budget: int | None = None,
        batch_size: int = 1,
        fail_on: tuple[int, ...] = (),
        fail_always: bool = False,
        array: bool = False,
    ) -> None:
        super().__init__(budget=budget, event_budget=event_budget, batch_size=batch_size)
        self.deliveries: list[str] = []
        self.items: list[list[str]] = []
        self.attempts = 0
        self.fail_on = fail_on
        self.fail_always = fail_always
        self.array = array
        self._segment_id = SEGMENT_ID

    def batch(self, items: Any) -> str:
        self._last_items = list(items)
        return "[" + ",".join(items) + "]" if self.array else "".join(items)

    def deliver(self, batch: str) -> None:
        self.attempts += 1
        if self.fail_always or self.attempts in self.fail_on:
            raise ConnectionError(f"transport down (attempt {self.attempts})")
        self.deliveries.append(batch)
        self.items.append(self._last_items)

    def envelopes(self) -> list[Envelope]:
        return [Envelope.parse(item) for items in self.items for item in items]

    def counts(self) -> list[int]:
        return [len(items) for items in self.items]
