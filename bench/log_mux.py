"""One long segment written through SegmentLog (batched, as a worker writes it) and read
through a LogMultiplexer with splicing (as the web relays it): events/s end to end and
the reader process's CPU per event.

    PYTHONPATH=. .venv/bin/python bench/log_mux.py [--events 20000] [--streams 1]

The writer runs in a process of its own (as a worker does), so the CPU figure is the
reader's alone: its multiplexer thread, the splicing and the joining of frames. Needs a
Redis (RELAYLINE_TEST_REDIS_URL, else a private server of its own).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import threading
import time

import redis

from relayline.channels import LogLimits, LogOnlyChannel, SegmentLog
from relayline.channels.stream.reader import LogMultiplexer
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from tests.support.channel_support import State
from tests.support.redis_server import RedisDatabases, redis_server


def _write(url: str, segment_ids: list[str], events: int, go: threading.Event) -> None:
    """One thread per segment, as a worker runs one turn per thread."""
    client = redis.Redis.from_url(url)

    def turn(segment_id: str) -> None:
        log = SegmentLog(client, segment_id, f"bench-{segment_id}", LogLimits())
        channel = LogOnlyChannel().into_segment(segment_id, log)
        go.wait()
        for n in range(events):
            channel.send(ProtocolEvent("text", {"content": f"chunk {n} "}))
        channel.completed(State(f"bench-{segment_id}"), f"bench-{segment_id}")

    turns = [threading.Thread(target=turn, args=(s,)) for s in segment_ids]
    for thread in turns:
        thread.start()
    for thread in turns:
        thread.join()


def _read(logs: LogMultiplexer, segment_id: str, counts: list[int]) -> None:
    seen = 0
    with logs.subscribe(segment_id) as subscription:
        for batch in subscription.batches(wait=15, timeout=60):
            if batch is None:
                continue
            frames = "".join(f"id: {segment_id}:{s.sequence}\n{s.frame}" for s in batch)
            seen += len(batch)
            del frames
    counts.append(seen)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--streams", type=int, default=1)
    args = parser.parse_args()
    with redis_server() as base, RedisDatabases(base).database("bench log_mux") as url:
        client = redis.Redis.from_url(url)
        logs = LogMultiplexer(client)
        segment_ids = [new_segment_id() for _ in range(args.streams)]
        go = multiprocessing.Event()
        writer = multiprocessing.Process(
            target=_write, args=(url, segment_ids, args.events, go), daemon=True
        )
        writer.start()
        counts: list[int] = []
        readers = [threading.Thread(target=_read, args=(logs, s, counts)) for s in segment_ids]
        for reader in readers:
            reader.start()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        began = time.monotonic()
        go.set()
        for reader in readers:
            reader.join()
        took = time.monotonic() - began
        after = resource.getrusage(resource.RUSAGE_SELF)
        writer.join()
        logs.close()
        client.close()
    total = sum(counts)
    used = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    print(f"{total} events ({args.streams} streams) in {took:.3f} s: {total / took:,.0f} events/s")
    print(f"reader CPU {used:.3f} s: {used / total * 1e6:.1f} us per event")


if __name__ == "__main__":
    main()
