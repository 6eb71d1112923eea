"""First-comer claims on a real Redis: a segment's start goes to a stop or to its task,
whichever comes first, and the other learns which; an interruption's answer goes to one
of many concurrent claimants, and a released claim never drops another's."""

from __future__ import annotations

import threading

import pytest
import redis

from relayline.channels.keys import continuation_key, pending_stop_key
from relayline.channels.runs.claims import (
    SegmentStart,
    claim_continuation,
    queue_start,
    release_continuation,
    stop_before_start,
)
from relayline.shared.ids import new_segment_id

pytestmark = pytest.mark.integration


def _task_starts(client: redis.Redis, segment_id: str, run_id: str) -> SegmentStart:
    pipe = client.pipeline(transaction=False)
    queue_start(pipe, segment_id, run_id, keep=60)
    (reply,) = pipe.execute()
    return SegmentStart.parse(reply)


def test_a_stop_before_the_task_is_what_the_task_finds(client: redis.Redis) -> None:
    segment = new_segment_id()
    assert stop_before_start(client, segment, keep=60) == SegmentStart(True, None)
    assert _task_starts(client, segment, "run_a") == SegmentStart(True, None)
    assert stop_before_start(client, segment, keep=60) == SegmentStart(True, None)
    assert 0 < int(client.ttl(pending_stop_key(segment))) <= 60  # type: ignore[arg-type]


def test_a_task_before_the_stop_names_its_run_to_the_stop(client: redis.Redis) -> None:
    segment = new_segment_id()
    assert _task_starts(client, segment, "run_b") == SegmentStart(False, "run_b")
    assert stop_before_start(client, segment, keep=60) == SegmentStart(False, "run_b")
    # A redelivery of the task finds its own start.
    assert _task_starts(client, segment, "run_b") == SegmentStart(False, "run_b")


def test_an_older_webs_stop_marker_still_stops(client: redis.Redis) -> None:
    segment = new_segment_id()
    client.set(pending_stop_key(segment), "1", ex=60)
    assert _task_starts(client, segment, "run_c").stopped


def test_one_of_many_concurrent_answers_claims_the_interruption(client: redis.Redis) -> None:
    segments = [new_segment_id() for _ in range(40)]
    holders: list[str] = []
    start = threading.Barrier(len(segments))

    def answer(segment: str) -> None:
        start.wait(10)
        holders.append(claim_continuation(client, "run_d", 3, segment, keep=60))

    workers = [threading.Thread(target=answer, args=(s,)) for s in segments]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(20)
    assert len(holders) == len(segments)
    (winner,) = set(holders)  # every claimant learns the one winner
    assert winner in segments
    # Another attempt of the run is another interruption.
    assert claim_continuation(client, "run_d", 4, segments[0], keep=60) == segments[0]

    loser = next(s for s in segments if s != winner)
    release_continuation(client, "run_d", 3, loser)  # not its claim: nothing happens
    assert client.get(continuation_key("run_d", 3)) == winner.encode()
    release_continuation(client, "run_d", 3, winner)  # it could not send: given back
    assert claim_continuation(client, "run_d", 3, loser, keep=60) == loser
