"""The delivery tables name every delivery the settings accept and every target kind a
job may carry, so a new one cannot be half added; every target writes the segment log."""

from __future__ import annotations

from typing import cast

import redis

from relayline.channels import LogOnlyChannel
from relayline.shared.ids import new_segment_id
from relayline.shared.jobs import TARGET_KINDS, Target
from relayline.shared.persistence import Store
from relayline.shared.registry import AgentRegistry
from relayline.shared.settings import DELIVERIES as SETTINGS_DELIVERIES
from relayline.shared.settings import Settings
from relayline.web.dispatch import DELIVERIES
from relayline.worker.resources import Resources
from relayline.worker.targets import CHANNELS, channel_factory


def test_the_web_offers_exactly_the_deliveries_the_settings_accept() -> None:
    assert tuple(DELIVERIES) == SETTINGS_DELIVERIES


def test_the_worker_builds_a_channel_for_every_target_kind() -> None:
    assert tuple(CHANNELS) == TARGET_KINDS


def test_a_job_for_nobody_still_writes_its_segment_log_from_a_fresh_channel() -> None:
    # Nothing connects until a channel sends: a client object and settings are enough.
    res = Resources(
        settings=Settings(),
        store=cast(Store, None),
        redis=redis.Redis(),
        registry=cast(AgentRegistry, None),
    )
    segment_id = new_segment_id()
    factory = channel_factory(Target("none"), "thread-1", res, segment_id)
    first, second = factory(), factory()
    assert isinstance(first, LogOnlyChannel) and isinstance(second, LogOnlyChannel)
    assert first is not second
    assert first.segment_id == segment_id and first.log is not None
    assert first.log.key == f"relayline:{{seg:{segment_id}}}:log"
