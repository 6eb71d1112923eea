"""MercureChannel against a real Mercure hub (flask-mercure-sse), read by an SSE
subscriber holding a subscriber JWT (catalogue E, J 153-160): the shared behaviour
suite, update replays, private updates, and packed protocol output."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import requests
from ag_ui_validate.pytest_plugin import assert_valid_agui

from relayline.channels import (
    AbstractChannel,
    Consumer,
    Envelope,
    MercureChannel,
    subscriber_token,
)
from relayline.channels.envelope import FRAGMENT, TERMINALS
from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.providers import ScriptedProvider
from tests.support.channel_behaviour import ChannelBehaviour, terminal_arrived
from tests.support.channel_support import State
from tests.support.mercure_hub import MercureHub
from tests.support.mercure_sse import HubSubscription, publish

pytestmark = pytest.mark.integration

LONG = "Perugia è bella / 😀 日本語 " * 300
DONE = State("thread-42")


def topic_for(name: str) -> str:
    return f"https://relayline.test/threads/{name.replace(':', '-')}"


class MercureSubscription:
    """An SSE subscription to ``topic``, ready once constructed (probed)."""

    def __init__(self, hub: MercureHub, topic: str, token: str, timeout: float = 10.0) -> None:
        self.raw: list[str] = []  # every update's data on ``topic``, in arrival order
        self.hub = HubSubscription(hub, topic, token, timeout)

    def next_update(self, timeout: float) -> str:
        """The next update on the topic (probes skipped)."""
        update = self.hub.next_update(timeout)
        self.raw.append(update)
        return update

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        while not terminal_arrived(frames):
            update = json.loads(self.next_update(timeout))
            assert isinstance(update, list), "each update is a JSON array of envelopes"
            frames.extend(update)
        return frames

    def close(self) -> None:
        self.hub.close()


def flaky_sessions(fail_on: int | None) -> Callable[[], requests.Session]:
    """Sessions whose n-th publish, counted across them, carries a forged JWT: the hub
    refuses it (403)."""
    posts = itertools.count(1)

    class FlakySession(requests.Session):
        def post(self, url: Any, data: Any = None, json: Any = None, **kwargs: Any) -> Any:
            if next(posts) == fail_on:
                kwargs["headers"] = {**kwargs["headers"], "Authorization": "Bearer forged"}
            return super().post(url, data=data, json=json, **kwargs)

    return FlakySession


class TestMercureBehaviour(ChannelBehaviour):
    @pytest.fixture(autouse=True)
    def _hub(self, hub: MercureHub) -> None:
        self.hub = hub

    def make_channel(
        self, name: str, *, fragmenting: bool = False, fail_delivery: int | None = None
    ) -> AbstractChannel:
        return MercureChannel(
            self.hub.url,
            topic_for(name),
            self.hub.publisher_key,
            max_request_bytes=3000 if fragmenting else 1_048_576,
            session_factory=flaky_sessions(fail_delivery),
        )

    def subscribe(self, name: str) -> MercureSubscription:
        token = subscriber_token(self.hub.subscriber_key, topic_for(name), 60)
        return MercureSubscription(self.hub, topic_for(name), token)


def subscription(hub: MercureHub, topic: str) -> MercureSubscription:
    return MercureSubscription(hub, topic, subscriber_token(hub.subscriber_key, topic, 60))


def delivered(frames: list[Any], batches: Sequence[str] = ()) -> list[tuple[str, Any]]:
    found: list[Envelope] = []
    gaps: list[str] = []
    consumer = Consumer(found.append, gaps.append)
    for frame in frames:
        consumer.feed(frame)
    for batch in batches:
        consumer.feed_batch(batch)
    assert not gaps
    return [(e.type, e.data) for e in found]


@pytest.mark.parametrize("terminal", sorted(TERMINALS))
def test_terminal_first_then_reversed_duplicated_fragments_gives_the_exact_events(
    hub: MercureHub, terminal: str
) -> None:
    # J153 (and J154: every update delivered twice) on what the hub dispatched.
    topic = topic_for(f"j153:{uuid.uuid4().hex}")
    reader = subscription(hub, topic)
    channel = MercureChannel(hub.url, topic, hub.publisher_key, max_request_bytes=8000)
    events = [
        ProtocolEvent("text-start", {"id": "t1"}),
        ProtocolEvent("text-delta", {"id": "t1", "delta": LONG}),
        ProtocolEvent("tool-output-available", {"toolCallId": "c1", "output": LONG[::-1]}),
    ]
    try:
        for event in events:
            channel.send(event)
        {
            "stream.completed": lambda: channel.completed(DONE, "thread-42"),
            "stream.interrupted": lambda: channel.interrupted(DONE, "thread-42"),
            "stream.failed": lambda: channel.failed(RuntimeError("boom"), "thread-42"),
        }[terminal]()
        frames = reader.receive(10)
    finally:
        reader.close()
    expected = [(e.type, e.data) for e in events] + [(terminal, {"workflowId": "thread-42"})]
    fragments = [f for f in frames if f["type"] == FRAGMENT]
    assert len({f["sequence"] for f in fragments}) == 2
    first, last = frames[0], frames[-1]
    assert last["type"] == terminal and frames == [first, *fragments, last]
    assert delivered([last, *(fragments + fragments)[::-1], first]) == expected
    assert delivered([], [u for update in reader.raw for u in (update, update)]) == expected


def test_private_updates_are_refused_to_a_subscriber_without_rights(hub: MercureHub) -> None:
    topic = topic_for(f"private:{uuid.uuid4().hex}")
    elsewhere = subscriber_token(hub.subscriber_key, topic_for("someone-else"), 60)
    stranger = MercureSubscription(hub, topic, elsewhere)
    reader = subscription(hub, topic)
    try:
        channel = MercureChannel(hub.url, topic, hub.publisher_key)
        channel.send(ProtocolEvent("text-delta", {"id": "t1", "delta": "secret"}))
        channel.completed(DONE, "thread-42")
        assert [f["type"] for f in reader.receive(10)] == ["text-delta", "stream.completed"]
        publish(hub, topic, "sentinel")  # public, and dispatched after the private ones
        assert stranger.next_update(10) == "sentinel"
        assert reader.next_update(10) == "sentinel"
    finally:
        stranger.close()
        reader.close()
    anonymous = requests.get(hub.url, params={"topic": topic}, timeout=10)
    assert anonymous.status_code == 401


#: one long answer in a few big chunks, so its deltas fragment
LONG_SCRIPT = {"chunk_size": 6000, "rules": [{"match": "", "steps": [{"text": LONG * 2}]}]}
ADAPTERS: dict[str, Callable[[str], StreamAdapter]] = {
    "agui": lambda thread: AGUIAdapter(thread, "client-run-1"),
    "vercel": lambda thread: VercelAIAdapter(),
}


@pytest.mark.parametrize("protocol", sorted(ADAPTERS))
def test_protocol_output_packed_and_fragmented_arrives_intact(  # J160
    hub: MercureHub, sqlite_store: Store, protocol: str
) -> None:
    topic = topic_for(f"j160:{uuid.uuid4().hex}")
    agent = Agent(
        f"thread-{uuid.uuid4().hex[:8]}", AgentSpec(ScriptedProvider(LONG_SCRIPT)), sqlite_store
    )
    agent.set_stream_adapter(lambda: ADAPTERS[protocol](agent.thread_id))
    agent.set_channel(
        lambda: MercureChannel(
            hub.url,
            topic,
            hub.publisher_key,
            max_request_bytes=8000,
            max_requests_per_second=20,  # events pack while the slot is closed
        )
    )
    reader = subscription(hub, topic)
    try:
        pulled = list(agent.stream("Tell me about Perugia"))
        frames = reader.receive(10)
    finally:
        reader.close()
    assert sum(1 for f in frames if f["type"] == FRAGMENT) > 2
    assert max(len(json.loads(update)) for update in reader.raw) > 1  # packed
    events = delivered(frames)
    assert events == [(p.type, p.data) for p in pulled] + [
        ("stream.completed", {"workflowId": agent.thread_id})
    ]
    deltas = [d.get("delta", "") for t, d in events if "CONTENT" in t or t == "text-delta"]
    assert "".join(deltas) == LONG * 2
    if protocol == "agui":
        assert_valid_agui([{"type": t, **d} for t, d in events[:-1]])
