"""A worker that was taken for lost and comes back stops quietly (fault 13 of issue 34).

The worker streaming an answer is frozen (SIGSTOP: a host cut off from the network)
until its heartbeat lapses; another worker's sweeper recovers the run, which completes
there. Then the frozen worker is let go (SIGCONT) with its answer mid-way: its buffered
text and whatever it tries next are refused by the old segment's fence, and the store
refuses its writes. It must write nothing more into any stream (no "The run failed.",
no failed terminal, no ``done``): the takeover's notice stays the old segment's last
entry, the run stays completed, and the worker's log has the one line that says why.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any, cast

import pytest
import redis
import requests

from relayline.channels.envelope import REPLACED, Envelope
from relayline.channels.keys import heartbeat_key, log_key, segments_key
from relayline.channels.stream.log import entries
from relayline.shared.persistence import Store
from tests.support.chaos import until
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import WebServer, Worker, fresh_env

pytestmark = pytest.mark.integration

#: short heartbeats, so that a frozen worker is taken for lost in seconds
HEARTBEATS = {"RELAYLINE_HEARTBEAT_TTL": "3", "RELAYLINE_HEARTBEAT_INTERVAL": "1"}


@pytest.mark.timeout(120)
def test_a_worker_fenced_out_while_frozen_writes_nothing_more(
    tmp_path: Path, redis_databases: RedisDatabases
) -> None:
    with redis_databases.database(f"fenced worker {tmp_path.name}") as redis_url:
        env = fresh_env(tmp_path, redis_url, **HEARTBEATS)
        workers = [Worker(env, "f0"), Worker(env, "f1")]
        web = WebServer(env)
        store = Store(env["DATABASE_URL"])
        client = redis.Redis.from_url(redis_url)
        frozen = None
        try:
            events: list[dict[str, Any]] = []

            def read() -> None:
                with requests.post(
                    f"{web.url}/api/threads/fenced-1/messages",
                    json={"content": "forecast"},
                    stream=True,
                    timeout=90,
                ) as response:
                    assert response.status_code == 200, response.text
                    for frame in frames(response):
                        events.append(frame.event)

            reader = threading.Thread(target=read)
            reader.start()

            def streaming() -> bool:
                types = [event["type"] for event in list(events)]
                return (
                    "tool-result" in types
                    and types[types.index("tool-result") :].count("text") >= 3
                )

            until(streaming, "the answer to stream")
            record = store.current_run("fenced-1")
            assert record is not None
            stamp = client.get(heartbeat_key(record.run_id))
            assert isinstance(stamp, bytes)
            holder = int(stamp.decode().split(":")[1])
            (frozen,) = [w for w in workers if w.process.pid == holder]
            os.kill(frozen.process.pid, signal.SIGSTOP)

            # Taken for lost: the other worker recovers the run and completes it.
            until(
                lambda: (
                    (r := store.current_run("fenced-1")) is not None and r.status == "completed"
                ),
                "the recovery to complete the run",
            )
            reader.join(timeout=60)
            assert not reader.is_alive()
            assert events[-1]["type"] == "error"
            assert events[-1]["code"] == "RUN_CONTINUES_ELSEWHERE"
            old_segment = Envelope.parse(entries(client, _first_segment(client))[0]).segment_id
            kept = entries(client, old_segment)
            assert Envelope.parse(kept[-1]).type == REPLACED

            # Back from the cut: it finds itself fenced out and stops, quietly.
            os.kill(frozen.process.pid, signal.SIGCONT)
            until(
                lambda: "was taken over by another attempt" in frozen.log.read_text(),
                "the fenced-out worker's line",
                timeout=60,
            )
            after = entries(client, old_segment)
            assert after == kept, after[len(kept) :]  # nothing after the notice
            assert not any("The run failed" in text for text in after)
            assert not any('"stream.failed"' in text for text in after)
            log = frozen.log.read_text()
            assert log.count("was taken over by another attempt") == 1
            assert "The run failed" not in log
            final = store.current_run("fenced-1")
            assert final is not None and final.status == "completed" and final.error is None
            assert final.attempt == 2
        finally:
            if frozen is not None and frozen.process.poll() is None:
                os.kill(frozen.process.pid, signal.SIGCONT)
            client.close()
            store.dispose()
            web.stop()
            for worker in workers:
                worker.stop()


def _first_segment(client: redis.Redis) -> str:
    """The thread's first segment: the one the frozen worker wrote (its run's start)."""
    members = cast(set[bytes], client.smembers(segments_key("fenced-1")))
    started: list[tuple[bytes, str]] = []
    for member in members:
        segment = member.decode()
        first = cast(list[tuple[bytes, Any]], client.xrange(log_key(segment), count=1))
        if first:
            started.append((first[0][0], segment))
    assert started, "no segment was written"
    return min(started)[1]
