"""A relayed client learns that its worker was lost, and that the run goes on, within
3 s of the recovery starting, and the loss is found within the heartbeat's lease
(default 15 s, plus one sweep), on the Redis broker and on RabbitMQ.

The worker holding a streamed answer is SIGKILLed whole (the threads pool: one process)
while a second worker runs. Timed from the kill: the recovery's start (the run's next
attempt admitted, read from the database) and the client's notice (the relay's
``RUN_CONTINUES_ELSEWHERE`` error frame, which the taker's ``stream.replaced`` entry in
the old segment's log brings at once; before it, the relay looked at its next 15 s
heartbeat only)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from relayline.channels.keys import heartbeat_key
from relayline.shared.persistence import Store
from relayline.worker.liveness import SWEEP_INTERVAL
from tests.support.chaos import report, until
from tests.support.rabbitmq import rabbitmq_vhost
from tests.support.redis_server import RedisDatabases
from tests.support.sse import frames
from tests.support.stack import WebServer, Worker, fresh_env

#: the default heartbeat TTL (RELAYLINE_HEARTBEAT_TTL): the lease a lost worker held
LEASE = 15.0
#: from the recovery's start to the client's notice, at most
NOTICE_TARGET = 3.0


class TimedRelay:
    """A native turn relayed to a client reading it in a thread of its own, with the
    monotonic time each frame arrived."""

    def __init__(self, url: str, thread_id: str, content: str) -> None:
        self.events: list[tuple[float, dict[str, Any]]] = []
        #: the last frame id (cursor) the client had before the notice
        self.cursors: list[str] = []

        def read() -> None:
            with requests.post(
                f"{url}/api/threads/{thread_id}/messages",
                json={"content": content},
                stream=True,
                timeout=120,
            ) as response:
                assert response.status_code == 200, response.text
                for frame in frames(response):
                    self.events.append((time.monotonic(), frame.event))
                    if frame.id is not None:
                        self.cursors.append(frame.id)

        self.thread = threading.Thread(target=read)
        self.thread.start()

    def streaming(self) -> bool:
        types = [event["type"] for _, event in list(self.events)]
        return "tool-result" in types and types[types.index("tool-result") :].count("text") >= 5

    def ended(self) -> list[tuple[float, dict[str, Any]]]:
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "the client never heard the end"
        return self.events


@contextmanager
def _broker(kind: str) -> Iterator[dict[str, str]]:
    if kind == "redis":
        yield {}
        return
    with rabbitmq_vhost() as url:
        yield {"CELERY_BROKER_URL": url}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("broker", ["redis", "rabbitmq"])
def test_a_relayed_client_hears_of_the_loss_within_3_s_of_the_recovery(
    tmp_path: Path, redis_databases: RedisDatabases, broker: str
) -> None:
    with (
        redis_databases.database(f"loss notice {tmp_path.name}") as redis_url,
        _broker(broker) as extra,
    ):
        env = fresh_env(tmp_path, redis_url, **extra)
        workers = [Worker(env, "n0"), Worker(env, "n1")]
        web = WebServer(env)
        store = Store(env["DATABASE_URL"])
        client = redis.Redis.from_url(redis_url)
        try:
            relay = TimedRelay(web.url, "notice-1", "forecast")
            until(relay.streaming, "the answer to stream")
            record = store.current_run("notice-1")
            assert record is not None and record.attempt == 1
            stamp = client.get(heartbeat_key(record.run_id))
            assert isinstance(stamp, bytes)
            holder_pid = int(stamp.decode().split(":")[1])
            (victim,) = [w for w in workers if w.process.pid == holder_pid]
            os.kill(victim.process.pid, signal.SIGKILL)
            killed = time.monotonic()
            victim.process.wait()

            recovered = None
            while recovered is None:
                assert time.monotonic() - killed < 2 * LEASE, "no recovery started"
                current = store.current_run("notice-1")
                if current is not None and current.attempt > 1:
                    recovered = time.monotonic()
                time.sleep(0.02)  # polling the stored run, bounded above
            events = relay.ended()
            heard, last = events[-1]
            assert last["type"] == "error" and last["code"] == "RUN_CONTINUES_ELSEWHERE", last
            assert all(event["type"] != "done" for _, event in events)
            # Resuming with the last cursor before the notice: the same news, and the
            # notice itself is never an event a client gets.
            resumed = list(
                frames(
                    requests.get(
                        f"{web.url}/api/threads/notice-1/stream",
                        headers={"Last-Event-ID": relay.cursors[-2]},
                        stream=True,
                        timeout=60,
                    )
                )
            )
            assert resumed[-1].event["code"] == "RUN_CONTINUES_ELSEWHERE"
            assert all(not f.event["type"].startswith("stream.") for f in resumed)
            until(
                lambda: (
                    (r := store.current_run("notice-1")) is not None and r.status == "completed"
                ),
                "the recovered run to complete",
                timeout=60,
            )
        finally:
            client.close()
            store.dispose()
            web.stop()
            for worker in workers:
                worker.stop()
    detected, notified = recovered - killed, heard - killed
    report(
        f"worker loss notice ({broker} broker, whole worker SIGKILLed, default heartbeats): "
        f"kill to recovery start {detected:.1f}s, kill to the client's notice {notified:.1f}s "
        f"(notice {heard - recovered:+.2f}s after the recovery started)"
    )
    # The beat lapses at most LEASE after the kill, the next sweep finds it, and another
    # worker admits the recovery (its pickup: the last term).
    assert detected <= LEASE + SWEEP_INTERVAL + 2.0, detected
    assert heard - recovered <= NOTICE_TARGET, (detected, notified)
