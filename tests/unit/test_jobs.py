"""The web-to-worker job contract: JSON round trips, and what a job refuses."""

from __future__ import annotations

import pytest

from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import (
    ContinueJob,
    ExpireJob,
    JobError,
    RecoverJob,
    Target,
    TurnJob,
    UserTurn,
)
from relayline.shared.tools import FrontendTool

STREAM = new_segment_id()


@pytest.mark.parametrize(
    "job",
    [
        TurnJob(
            thread_id="t-1",
            run_id="run_1",
            protocol="agui",
            message=UserTurn("u-1", "hello"),
            frontend_tools=(FrontendTool("read_title", "Read the page title"),),
            seed={"runId": "client-run", "state": {"a": 1}},
            target=Target("relay", "relayline:relay:abc"),
            segment_id=STREAM,
        ),
        ContinueJob(
            thread_id="t-1",
            run_id="run_1",
            protocol="vercel",
            attempt=2,
            answers={"call_1": {"result": "Page"}, "call_2": ["reject", "no"]},
            stop_after_tool_call=True,
            target=Target("pusher"),
        ),
        ExpireJob(thread_id="t-1", run_id="run_1", protocol="native", attempt=3),
        RecoverJob(
            thread_id="t-1", run_id="run_1", protocol="native", attempt=1, target=Target("none")
        ),
    ],
)
def test_a_job_survives_its_json(job: TurnJob | ContinueJob | ExpireJob | RecoverJob) -> None:
    assert type(job).from_json(job.to_json()) == job


def test_the_segment_id_travels_only_when_named() -> None:
    job = ExpireJob(thread_id="t-1", run_id="run_1", protocol="native", attempt=1)
    assert "streamId" not in job.to_json()
    assert job.to(Target("none"), STREAM).to_json()["streamId"] == STREAM


@pytest.mark.parametrize("segment_id", ["", "ABC", "0" * 31, "g" * 32, "0" * 32 + "\n"])
def test_a_malformed_segment_id_is_refused(segment_id: str) -> None:
    with pytest.raises(JobError, match="stream id"):
        ExpireJob(thread_id="t", run_id="r", protocol="native", attempt=1, segment_id=segment_id)
    data = {"threadId": "t", "runId": "r", "protocol": "native", "attempt": 1}
    with pytest.raises(JobError, match="stream id"):
        RecoverJob.from_json({**data, "streamId": segment_id})
