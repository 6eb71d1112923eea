"""The takeover of a run, in process, against a real Redis and SQLite: the taker (a
recovery admitted at the next attempt) appends the ``stream.replaced`` notice to the lost
writer's segment, naming its own; the lost writer, when it comes back, is fenced out by
the log or by the store, and its segment ends with ``FencedOutError``: no failure
frame, no terminal, nothing recorded against the run (faults 5 and 13 of issue 34)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from relayline.channels import LogOnlyChannel, SegmentLog
from relayline.channels.envelope import REPLACED, Envelope
from relayline.channels.stream.log import LogLimits, entries
from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.agent.agent import Segment
from relayline.shared.agent.segment import drain
from relayline.shared.errors import FencedOutError
from relayline.shared.events import ProtocolEvent
from relayline.shared.ids import new_segment_id
from relayline.shared.persistence import Store
from relayline.shared.protocols.native import NativeAdapter
from relayline.shared.providers import ScriptedProvider
from relayline.shared.run_state import RunState

pytestmark = pytest.mark.integration

ANSWER = "A long answer, told in many small chunks. " * 10


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    built = redis.Redis.from_url(redis_url)
    yield built
    built.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    built = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    yield built
    built.dispose()


def _spec() -> AgentSpec:
    rules = [{"match": "", "steps": [{"text": ANSWER}]}]
    return AgentSpec(provider=ScriptedProvider({"chunk_size": 3, "rules": rules}))


def _agent(store: Store, executor: str) -> Agent:
    agent = Agent("t-takeover", _spec(), store, executor=executor)
    agent.set_stream_adapter(NativeAdapter)
    return agent


def _logged(agent: Agent, client: redis.Redis, segment: str) -> None:
    log = SegmentLog(client, segment, "t-takeover", LogLimits())
    agent.set_channel(lambda: LogOnlyChannel().into_segment(segment, log))


class Recorder:
    """A channel with no log (a transport of an application's own): what it was told."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def send(self, event: ProtocolEvent) -> None:
        self.calls.append(event.type)

    def completed(self, state: RunState, workflow_id: str) -> None:
        self.calls.append("completed")

    def interrupted(self, state: RunState, workflow_id: str) -> None:
        self.calls.append("interrupted")

    def failed(self, error: BaseException, workflow_id: str) -> None:
        self.calls.append("failed")


def _started(segment: Segment, texts: int) -> list[Any]:
    """The lost writer's first events, up to ``texts`` text deltas."""
    seen: list[Any] = []
    while sum(getattr(e, "type", None) == "text" for e in seen) < texts:
        seen.append(next(segment))
    return seen


def test_the_taker_tells_the_lost_writers_readers_and_fences_its_log(
    client: redis.Redis, store: Store
) -> None:
    lost_segment, taker_segment = new_segment_id(), new_segment_id()
    lost = _agent(store, "task-lost")
    _logged(lost, client, lost_segment)
    running = lost.stream("Tell me")
    _started(running, 3)  # the lost writer is mid-answer, its log begun
    record = store.current_run("t-takeover")
    assert record is not None and record.attempt == 1

    taker = _agent(store, "task-taker")
    _logged(taker, client, taker_segment)
    state = drain(taker.recover(run_id=record.run_id, attempt=1).events())
    assert (state.status, state.attempt) == ("completed", 2)
    notice = Envelope.parse(entries(client, lost_segment)[-1])
    assert notice.type == REPLACED
    assert notice.data == {"newer": taker_segment, "attempt": 2}
    kept = entries(client, lost_segment)

    # The lost writer goes on: refused, and its segment ends without a word.
    with pytest.raises(FencedOutError):
        for _ in running:
            pass
    assert entries(client, lost_segment) == kept
    final = store.current_run("t-takeover")
    assert final is not None and (final.status, final.attempt, final.error) == (
        "completed",
        2,
        None,
    )
    assert [Envelope.parse(t).type for t in entries(client, taker_segment)][-1] == (
        "stream.completed"
    )


def test_a_store_conflict_ends_the_lost_writers_segment_quietly(
    client: redis.Redis, store: Store
) -> None:
    """A lost writer whose channel has no log meets the store's refusal first: the
    segment still ends with FencedOutError, its channel told nothing more (no error
    frame, no ``failed``), the run left as the taker wrote it."""
    recorder = Recorder()
    lost = _agent(store, "task-lost")
    lost.set_channel(lambda: recorder)
    running = lost.stream("Tell me")
    _started(running, 2)
    record = store.current_run("t-takeover")
    assert record is not None
    taker = _agent(store, "task-taker")
    _logged(taker, client, new_segment_id())
    assert drain(taker.recover(run_id=record.run_id, attempt=1).events()).status == "completed"

    told = len(recorder.calls)
    with pytest.raises(FencedOutError) as fenced:
        for _ in running:
            pass
    assert "store refused attempt 1" in fenced.value.fence_reason
    after = recorder.calls[told:]
    assert "failed" not in after and "error" not in after and "completed" not in after
    assert all(call == "text" for call in after), after
    final = store.current_run("t-takeover")
    assert final is not None and final.status == "completed" and final.error is None
