"""The pieces of a relayed turn's wait for a worker (web.waiting): the status frame in
each protocol, when the wait gives up, and the withdrawal's claim as a worker reads it.
The whole wait, against real processes: tests/integration/test_waiting_for_worker.py."""

from __future__ import annotations

from relayline.channels.runs.claims import SegmentStart
from relayline.shared.jobs import TurnJob, UserTurn
from relayline.shared.settings import Settings
from relayline.web.waiting import WaitStatus, WaitTimes, status_frames

QUEUED: WaitStatus = {"state": "queued", "waited": 2.0, "withdrawAfter": 60.0, "workers": 0}


def job(protocol: str) -> TurnJob:
    return TurnJob(
        thread_id="t-1",
        owner="ann",
        protocol=protocol,  # type: ignore[arg-type]
        run_id="run_1",
        message=UserTurn("msg_1", "hi"),
        seed={"runId": "client-run"} if protocol == "agui" else {},
    )


def test_agui_status_is_a_custom_event_after_its_own_run_start() -> None:
    frames = status_frames(job("agui"), QUEUED, start=True)
    assert [(f.type, f.data) for f in frames] == [
        ("RUN_STARTED", {"runId": "client-run", "threadId": "t-1"}),
        ("CUSTOM", {"name": "relayline.status", "value": dict(QUEUED)}),
    ]
    later = status_frames(job("agui"), QUEUED, start=False)
    assert [f.type for f in later] == ["CUSTOM"]


def test_vercel_status_is_a_transient_data_part() -> None:
    [frame] = status_frames(job("vercel"), QUEUED, start=True)
    assert (frame.type, frame.data) == (
        "data-relayline-status",
        {"data": dict(QUEUED), "transient": True},
    )


def test_native_status_is_a_status_frame() -> None:
    [frame] = status_frames(job("native"), QUEUED, start=True)
    assert (frame.type, frame.data) == ("status", dict(QUEUED))


def test_the_wait_gives_up_by_the_relay_timeout_when_that_is_shorter() -> None:
    assert WaitTimes.from_settings(Settings(), 15.0) == WaitTimes(2.0, 60.0, 15.0, 300.0)
    short = Settings(relay_timeout=3.0)
    assert WaitTimes.from_settings(short, 15.0) == WaitTimes(2.0, 3.0, 15.0, 3.0)
    shorter = Settings(relay_timeout=1.0)
    assert WaitTimes.from_settings(shorter, 15.0) == WaitTimes(1.0, 1.0, 15.0, 1.0)


def test_a_withdrawn_start_is_read_as_withdrawn_and_stopped() -> None:
    assert SegmentStart.parse(b"withdrawn") == SegmentStart(True, None, withdrawn=True)
    assert SegmentStart.parse(b"stop") == SegmentStart(True, None)
    assert SegmentStart.parse(b"run:run_1") == SegmentStart(False, "run_1")
