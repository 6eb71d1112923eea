"""The admission limits as Settings reads them: off by default, 0 for off, a clear
error for anything but a whole number."""

from __future__ import annotations

import pytest

from relayline.shared.settings import Settings


def test_limits_are_off_by_default() -> None:
    settings = Settings.from_env({})
    assert (settings.max_queued_turns, settings.max_queued_turns_per_owner) == (0, 0)


def test_limits_are_read() -> None:
    settings = Settings.from_env(
        {"RELAYLINE_MAX_QUEUED_TURNS": "500", "RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER": "0"}
    )
    assert (settings.max_queued_turns, settings.max_queued_turns_per_owner) == (500, 0)


@pytest.mark.parametrize("value", ["-1", "ten", "2.5"])
def test_a_limit_that_is_not_a_whole_number_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER must be a whole"):
        Settings.from_env({"RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER": value})
