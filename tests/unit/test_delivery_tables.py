"""The delivery tables name every delivery the settings accept and every target kind a
job may carry, so a new one cannot be half added."""

from __future__ import annotations

from typing import cast

from channels import NullChannel
from shared.jobs import TARGET_KINDS, Target
from shared.settings import DELIVERIES as SETTINGS_DELIVERIES
from web.dispatch import DELIVERIES
from worker.resources import Resources
from worker.targets import CHANNELS, channel_factory


def test_the_web_offers_exactly_the_deliveries_the_settings_accept() -> None:
    assert tuple(DELIVERIES) == SETTINGS_DELIVERIES


def test_the_worker_builds_a_channel_for_every_target_kind() -> None:
    assert tuple(CHANNELS) == TARGET_KINDS


def test_a_job_for_nobody_gets_a_fresh_null_channel_per_segment() -> None:
    factory = channel_factory(Target("none"), "thread-1", cast(Resources, None))
    first, second = factory(), factory()
    assert isinstance(first, NullChannel) and isinstance(second, NullChannel)
    assert first is not second
