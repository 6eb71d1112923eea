"""Redis helpers for the channel integration tests: a fault-injecting client and a raw
subscriber (fixtures are in conftest.py)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, cast

import redis

from tests.support.channel_behaviour import terminal_arrived


def flaky(url: str) -> FlakyRedis:
    """A FlakyRedis on ``url``, closing its own pool on close() like ``from_url``."""
    return cast(FlakyRedis, FlakyRedis.from_url(url))


class FlakyRedis(redis.Redis):
    """A real client whose n-th PUBLISH fails (``reply`` False, or a connection error)."""

    fail_on: int | None = None
    reply: Any = None
    numsub_called: threading.Event
    numsub_error: Exception | None = None

    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        self.publishes = getattr(self, "publishes", 0) + 1
        if self.publishes == self.fail_on:
            if self.reply is not None:
                return self.reply
            raise redis.ConnectionError("Connection reset by peer")
        return super().publish(channel, message, **kwargs)

    def pubsub_numsub(self, *args: Any, **kwargs: Any) -> Any:
        if hasattr(self, "numsub_called"):
            self.numsub_called.set()
        if self.numsub_error is not None:
            raise self.numsub_error
        return super().pubsub_numsub(*args, **kwargs)


class RedisSubscription:
    """A raw SUBSCRIBE, confirmed before returning, read after (or while) publishing."""

    def __init__(self, client: redis.Redis, name: str) -> None:
        self.pubsub = client.pubsub()  # type: ignore[no-untyped-call]
        self.pubsub.subscribe(name)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=1)
            if message is not None and message["type"] == "subscribe":
                return
        raise AssertionError("no subscription confirmation")

    def take(self, count: int, timeout: float = 5.0) -> list[bytes]:
        """The next ``count`` published messages, waiting at most ``timeout`` seconds."""
        found: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(found) < count and (left := deadline - time.monotonic()) > 0:
            message = self.pubsub.get_message(timeout=left)
            if message is not None and message["type"] == "message":
                found.append(message["data"])
        if len(found) < count:
            raise AssertionError(f"{len(found)} of {count} messages within {timeout}s: {found}")
        return found

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while not terminal_arrived(frames):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no terminal within {timeout}s: {frames}")
            message = self.pubsub.get_message(timeout=left)
            if message is not None and message["type"] == "message":
                frames.append(json.loads(message["data"]))
        return frames

    def close(self) -> None:
        self.pubsub.close()


def numsub(client: redis.Redis, name: str) -> int:
    """Exact-channel subscribers of ``name``."""
    counts: list[tuple[bytes, int]] = client.pubsub_numsub(name)  # type: ignore[assignment]
    return sum(count for _, count in counts)
