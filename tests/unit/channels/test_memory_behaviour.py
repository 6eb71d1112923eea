"""The channel behaviour suite against MemoryChannel: the same contract the Redis,
Pusher and Mercure transports keep, checked in-process with no service."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from relayline.channels import MemoryChannel
from tests.support.channel_behaviour import ChannelBehaviour, terminal_arrived


class MemorySubscription:
    """What subscribers of ``name`` would receive: every frame its channels published.
    Delivery is synchronous, so the frames are all there once the segment has run."""

    def __init__(self, published: list[MemoryChannel]) -> None:
        self.published = published

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        frames = [frame for channel in self.published for frame in channel.frames()]
        assert terminal_arrived(frames), f"no terminal among {len(frames)} frames"
        return frames

    def close(self) -> None:
        pass


class TestMemoryBehaviour(ChannelBehaviour):
    @pytest.fixture(autouse=True)
    def _published(self) -> None:
        self.published: defaultdict[str, list[MemoryChannel]] = defaultdict(list)

    def make_channel(
        self, name: str, *, fragmenting: bool = False, fail_delivery: int | None = None
    ) -> MemoryChannel:
        channel = MemoryChannel(
            budget=700 if fragmenting else None,
            fail_on=() if fail_delivery is None else (fail_delivery,),
        )
        self.published[name].append(channel)
        return channel

    def subscribe(self, name: str) -> MemorySubscription:
        return MemorySubscription(self.published[name])
