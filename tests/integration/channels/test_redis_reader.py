"""RedisChannelReader against a real Redis (catalogue C) and the relay pattern: a reader
subscribed before another thread or process publishes a whole agent segment."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from relayline.channels import (
    HEARTBEAT,
    ChannelConfigError,
    ChannelReadError,
    PublishError,
    RedisChannel,
    RedisChannelReader,
    is_terminal,
)
from relayline.shared.adapters import NativeAdapter
from relayline.shared.agent import Agent
from relayline.shared.errors import RunFailedError
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.sse import encode_event
from tests.support.channel_behaviour import LONG_RESULT, suite_spec
from tests.support.channel_redis import FlakyRedis, numsub
from tests.support.channel_support import State

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
DONE = State("thread-42")


def relay(reader: RedisChannelReader) -> tuple[list[str], ProtocolEvent]:
    """What the web layer writes: one SSE frame per event, the terminal ends it."""
    frames: list[str] = []
    terminal = reader.listen(
        lambda event: None if is_terminal(event.type) else frames.append(encode_event(event))
    )
    return frames, terminal


@pytest.mark.parametrize(
    ("message", "terminal"),
    [
        ("hello", "stream.completed"),
        ("What is the title?", "stream.interrupted"),
        ("please fail", "stream.failed"),
    ],
)
def test_a_segment_published_by_another_thread_is_relayed_byte_identical(
    client: FlakyRedis, name: str, sqlite_store: Store, message: str, terminal: str
) -> None:  # C20
    reader = RedisChannelReader(client, name, timeout=10)
    reader.subscribe()
    pulled: list[str] = []

    def task() -> None:  # what the Celery task does, on its own connection
        publisher = redis.Redis(connection_pool=client.connection_pool)
        agent = Agent("relay-thread", suite_spec(), sqlite_store)
        agent.set_stream_adapter(NativeAdapter)
        agent.set_channel(lambda: RedisChannel(publisher, name, await_listener=5))
        with contextlib.suppress(RunFailedError):  # its error frames are pulled first
            for event in agent.stream(message):
                pulled.append(encode_event(event))

    worker = threading.Thread(target=task)
    worker.start()
    frames, end = relay(reader)
    worker.join(10)
    assert frames == pulled and len(frames) > 2
    assert end == ProtocolEvent(terminal, {"workflowId": "relay-thread"})
    assert numsub(client, name) == 0


def test_a_segment_published_by_another_process_is_relayed_byte_identical(
    client: FlakyRedis, name: str, redis_url: str, tmp_path: Path
) -> None:  # C20, the Celery shape: subscribe, then dispatch, then stream
    with RedisChannelReader(client, name, timeout=30) as reader:
        task = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.channels.relay_publisher",
                redis_url,
                name,
                f"sqlite:///{tmp_path / 'relay.db'}",
                "long read",
                "1000",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        frames, end = relay(reader)
    out, err = task.communicate(timeout=60)
    assert task.returncode == 0, err
    assert frames == json.loads(out)
    assert any(LONG_RESULT in frame for frame in frames)
    assert end.type == "stream.completed"


@pytest.mark.parametrize("terminal", ["completed", "interrupted", "failed"])
def test_empty_maps_stay_objects_through_the_relay(
    client: FlakyRedis, name: str, terminal: str
) -> None:  # C21
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel = RedisChannel(client, name)
    events = [
        ProtocolEvent("custom", {"value": {}, "list": [], "nested": {"inner": {}}}),
        ProtocolEvent("finish", {}),
    ]
    for event in events:
        channel.send(event)
    {
        "completed": lambda: channel.completed(DONE, "thread-42"),
        "interrupted": lambda: channel.interrupted(DONE, "thread-42"),
        "failed": lambda: channel.failed(RuntimeError("x"), "thread-42"),
    }[terminal]()
    frames, end = relay(reader)
    assert frames == [
        'data: {"type":"custom","value":{},"list":[],"nested":{"inner":{}}}\n\n',
        'data: {"type":"finish"}\n\n',
    ]
    assert frames == [encode_event(e) for e in events]
    assert end == ProtocolEvent(f"stream.{terminal}", {"workflowId": "thread-42"})


def test_a_segment_replaced_before_its_terminal_is_refused(
    client: FlakyRedis, name: str
) -> None:  # C22
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    first, second = RedisChannel(client, name), RedisChannel(client, name)
    first.send(ProtocolEvent("text", {"content": "a"}))
    second.send(ProtocolEvent("text", {"content": "again"}))
    seen: list[ProtocolEvent] = []
    with pytest.raises(ChannelReadError) as caught:
        reader.listen(seen.append)
    assert caught.value.message == (
        f"Segment {first.stream_id} on Redis channel {name} ended without a terminal "
        "event: another segment started."
    )
    assert seen == [ProtocolEvent("text", {"content": "a"})]
    assert numsub(client, name) == 0


def test_a_segment_started_before_the_subscription_is_refused(
    client: FlakyRedis, name: str
) -> None:  # C23
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "missed"}))
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel.send(ProtocolEvent("text", {"content": "heard"}))
    with pytest.raises(ChannelReadError) as caught:
        reader.listen(print)
    assert caught.value.message == (
        f"Segment {channel.stream_id} on Redis channel {name} started before the reader subscribed."
    )


def test_silence_past_the_timeout_is_an_error_and_the_client_stays_usable(
    client: FlakyRedis, name: str
) -> None:  # C24
    reader = RedisChannelReader(client, name, timeout=0.2)
    with pytest.raises(ChannelReadError) as caught:
        reader.listen(print)
    assert caught.value.message == (
        f"Nothing arrived on Redis channel {name} within the 0.2-second timeout."
    )
    assert client.ping() and numsub(client, name) == 0
    with pytest.raises(ChannelConfigError):
        RedisChannelReader(client, name, timeout=0)


@contextlib.contextmanager
def no_channels_allowed(client: FlakyRedis) -> Iterator[redis.Redis]:
    """A client of a throwaway ACL user that may subscribe to no channel."""
    user = f"relayline-test-{uuid.uuid4().hex[:8]}"
    client.acl_setuser(
        user, enabled=True, nopass=True, commands=["+@all"], keys=["*"], reset_channels=True
    )
    where = client.connection_pool.connection_kwargs
    limited = redis.Redis(host=where["host"], port=where["port"], username=user)
    try:
        yield limited
    finally:
        limited.close()
        client.acl_deluser(user)


def test_a_refused_subscription_fails_subscribe_itself(client: FlakyRedis, name: str) -> None:
    """subscribe() reads the server's answer, so an ACL refusal surfaces before the
    endpoint dispatches a job that would publish to nobody."""
    with no_channels_allowed(client) as limited:
        reader = RedisChannelReader(limited, name, timeout=5)
        with pytest.raises(redis.exceptions.NoPermissionError):
            reader.subscribe()
        assert numsub(client, name) == 0


def test_an_unconfirmed_subscription_still_hears_everything_once_confirmed(
    client: FlakyRedis, name: str
) -> None:
    """The relay sends SUBSCRIBE, enqueues the job, then awaits the confirmation: what
    a publisher sends in between is neither lost nor read as the confirmation."""
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe(confirm=False)
    channel = RedisChannel(client, name, await_listener=5)
    channel.send(ProtocolEvent("text", {"content": "early"}))
    channel.completed(DONE, "wf-1")
    reader.confirm()
    assert numsub(client, name) == 1
    seen: list[ProtocolEvent] = []
    end = reader.listen(seen.append)
    assert seen == [ProtocolEvent("text", {"content": "early"}), end]
    assert end == ProtocolEvent("stream.completed", {"workflowId": "wf-1"})
    assert numsub(client, name) == 0


def test_a_refused_unconfirmed_subscription_fails_confirm(client: FlakyRedis, name: str) -> None:
    with no_channels_allowed(client) as limited:
        reader = RedisChannelReader(limited, name, timeout=5)
        reader.subscribe(confirm=False)
        with pytest.raises(redis.exceptions.NoPermissionError):
            reader.confirm()
        assert numsub(client, name) == 0


def test_a_throwing_callback_ends_the_subscription(client: FlakyRedis, name: str) -> None:  # C25
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    assert numsub(client, name) == 1  # confirmed before subscribe() returned
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "a"}))

    def gone(event: ProtocolEvent) -> None:
        raise BrokenPipeError("client went away")

    with pytest.raises(BrokenPipeError):
        reader.listen(gone)
    assert numsub(client, name) == 0 and client.ping()


def test_fragments_of_a_budgeted_channel_are_reassembled(client: FlakyRedis, name: str) -> None:
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel = RedisChannel(client, name, max_message_bytes=300)
    big = ProtocolEvent("tool-result", {"result": LONG_RESULT[:3000]})
    channel.send(big)
    channel.send(ProtocolEvent("text", {"content": "after"}))
    channel.completed(DONE, "x" * 500)  # a fragmented terminal
    seen: list[ProtocolEvent] = []
    end = reader.listen(seen.append)
    assert seen == [big, ProtocolEvent("text", {"content": "after"}), end]
    assert end == ProtocolEvent("stream.completed", {"workflowId": "x" * 500})


def test_lost_events_are_an_error_not_a_clean_end(client: FlakyRedis, name: str) -> None:
    client.fail_on = 2
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    channel = RedisChannel(client, name)
    for text in "abc":
        with contextlib.suppress(PublishError):  # the second publish fails
            channel.send(ProtocolEvent("text", {"content": text}))
    channel.completed(DONE, "thread-42")
    with pytest.raises(ChannelReadError, match="lost events: expected sequence 1, got 2"):
        reader.listen(print)


SID = "3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0"


def fragment(index: int, total: int, part: str) -> str:
    data = {"event": "text", "index": index, "total": total, "part": part}
    return json.dumps({"streamId": SID, "sequence": 0, "type": "stream.fragment", "data": data})


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        (["not json"], "carried an invalid frame: Invalid channel envelope"),
        ([fragment(0, 1, "QQ+/")], "carried an invalid frame: Invalid channel fragment"),
        ([fragment(0, 2, "eyJh"), fragment(1, 2, "_w==")], "Invalid reassembled payload"),
        ([fragment(0, 1, "WzFd")], "Protocol event payload must be an object"),  # [1]
        ([fragment(0, 2, "eyJh"), fragment(0, 2, "eyJh")], "lost events"),
    ],
)
def test_invalid_frames_end_the_relay(
    client: FlakyRedis, name: str, frames: list[str], reason: str
) -> None:
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    for frame in frames:
        client.publish(name, frame)
    with pytest.raises(ChannelReadError, match=reason):
        reader.listen(print)
    assert numsub(client, name) == 0


def test_events_tick_heartbeats_during_silence(client: FlakyRedis, name: str) -> None:
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    go = threading.Event()

    def task() -> None:
        if go.wait(5):  # publish only once the reader has ticked
            channel = RedisChannel(client, name)
            channel.send(ProtocolEvent("text", {"content": "late"}))
            channel.completed(DONE, "thread-42")

    worker = threading.Thread(target=task)
    worker.start()
    items: list[Any] = []
    for item in reader.events(heartbeat=0.05):
        items.append(item)
        go.set()
    worker.join(5)
    assert items[0] is HEARTBEAT
    events = [i for i in items if i is not HEARTBEAT]
    assert [e.type for e in events] == ["text", "stream.completed"]


def test_heartbeats_do_not_extend_the_timeout(client: FlakyRedis, name: str) -> None:
    reader = RedisChannelReader(client, name, timeout=0.3)
    ticks = 0
    with pytest.raises(ChannelReadError, match=r"within the 0\.3-second timeout"):
        for item in reader.events(heartbeat=0.05):
            assert item is HEARTBEAT
            ticks += 1
    assert ticks >= 2


def test_a_slow_client_is_not_mistaken_for_silence(client: FlakyRedis, name: str) -> None:
    reader = RedisChannelReader(client, name, timeout=0.2)
    reader.subscribe()
    channel = RedisChannel(client, name)
    channel.send(ProtocolEvent("text", {"content": "a"}))
    channel.completed(DONE, "thread-42")
    events = reader.events()
    assert next(events) == ProtocolEvent("text", {"content": "a"})
    time.sleep(0.3)  # the SSE client stalls (the behaviour under test, not a sync)
    assert next(events) == ProtocolEvent("stream.completed", {"workflowId": "thread-42"})


def test_closing_the_iterator_early_unsubscribes(client: FlakyRedis, name: str) -> None:
    reader = RedisChannelReader(client, name, timeout=5)
    reader.subscribe()
    RedisChannel(client, name).send(ProtocolEvent("text", {"content": "a"}))
    events = reader.events()
    assert next(events) == ProtocolEvent("text", {"content": "a"})
    assert numsub(client, name) == 1
    events.close()  # the SSE client disconnected
    assert numsub(client, name) == 0
