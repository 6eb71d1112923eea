"""Publish one agent segment from another process, as the Celery task does.

    python -m tests.integration.channels.relay_publisher REDIS_URL CHANNEL DB_URL MESSAGE [MAX]

Runs the suite's agent with the native adapter and ``RedisChannel(await_listener=5)``
(fragmenting above MAX bytes per message when given) and prints the pull-path SSE
frames as one JSON list on stdout, for comparison.
"""

from __future__ import annotations

import json
import sys

import redis

from relayline.channels import RedisChannel
from relayline.shared.adapters import NativeAdapter
from relayline.shared.agent import Agent
from relayline.shared.persistence import Store
from relayline.shared.sse import encode_sse
from tests.support.channel_behaviour import suite_spec


def main(redis_url: str, channel: str, database_url: str, message: str, most: str = "") -> None:
    client = redis.Redis.from_url(redis_url)
    store = Store(database_url)
    agent = Agent("relay-thread", suite_spec(), store)
    agent.set_stream_adapter(NativeAdapter)
    limit = int(most) if most else None
    agent.set_channel(
        lambda: RedisChannel(client, channel, await_listener=5, max_message_bytes=limit)
    )
    frames = list(encode_sse(agent.stream(message)))
    print(json.dumps(frames))
    store.dispose()
    client.close()


if __name__ == "__main__":
    main(*sys.argv[1:6])
