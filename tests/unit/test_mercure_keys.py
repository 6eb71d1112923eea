"""Mercure's JWT keys are held to SECRET_KEY's rule (at least 32 characters): a short
key is refused when the settings are read, standalone or embedded, and ``relayline``
reports it in one line, without a traceback, with exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from relayline.shared.auth import MIN_SECRET_LENGTH
from relayline.shared.settings import MercureSettings, Settings, child_environment

GOOD = "k" * MIN_SECRET_LENGTH
NAMES = ("MERCURE_PUBLISHER_JWT_KEY", "MERCURE_SUBSCRIBER_JWT_KEY")
#: the variables of this session left out of the command's environment
OURS = ("MERCURE_", "RELAYLINE_", "SECRET_KEY", "DATABASE_URL")


def _mercure(**keys: str) -> dict[str, str]:
    return {"MERCURE_HUB_URL": "http://127.0.0.1:1/.well-known/mercure", **keys}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("weak", ["abc", "k" * (MIN_SECRET_LENGTH - 1)])
def test_a_short_key_is_refused(name: str, weak: str) -> None:
    other = next(n for n in NAMES if n != name)
    with pytest.raises(ValueError) as caught:
        Settings.from_env(_mercure(**{name: weak, other: GOOD}))
    assert str(caught.value).startswith(f"{name} must be at least {MIN_SECRET_LENGTH} characters")
    assert weak not in str(caught.value)  # the message never repeats a secret


@pytest.mark.parametrize("name", NAMES)
def test_a_short_key_is_refused_without_mercure_delivery_too(name: str) -> None:
    # A key that is set signs tokens a hub trusts, whatever RELAYLINE_DELIVERY says.
    with pytest.raises(ValueError, match=name):
        Settings.from_env({"RELAYLINE_DELIVERY": "relay", name: "abc"})


def test_keys_of_32_characters_are_accepted() -> None:
    settings = Settings.from_env(_mercure(**dict.fromkeys(NAMES, GOOD)))
    assert settings.mercure.configured
    assert settings.mercure.problem() is None
    assert MercureSettings().problem() is None  # no Mercure at all


def test_an_embedding_applications_config_is_checked_alike() -> None:
    config = {"RELAYLINE_MERCURE_PUBLISHER_JWT_KEY": "abc", "RELAYLINE_MERCURE_HUB_URL": "h"}
    with pytest.raises(ValueError, match="MERCURE_PUBLISHER_JWT_KEY must be at least 32"):
        Settings.from_config(config, environ={})


@pytest.mark.parametrize("command", [["web"], ["worker"], ["migrate"], ["token", "ann"]])
def test_the_cli_reports_a_weak_key_in_one_line_with_status_2(
    command: list[str], tmp_path: Path
) -> None:
    env = {
        **{k: v for k, v in child_environment().items() if not k.startswith(OURS)},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "SECRET_KEY": "s" * MIN_SECRET_LENGTH,
        **_mercure(MERCURE_PUBLISHER_JWT_KEY="abc", MERCURE_SUBSCRIBER_JWT_KEY=GOOD),
    }
    done = subprocess.run(
        [sys.executable, "-m", "relayline.cli", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("relayline: invalid configuration (CONFIG_INVALID): ")
    assert "MERCURE_PUBLISHER_JWT_KEY must be at least 32 characters" in done.stderr
    assert not (tmp_path / "db.sqlite").exists()  # nothing started
