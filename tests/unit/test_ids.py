"""The id rules and minting of ``relayline.shared.ids``, which the agent, the web and the channels
all use."""

from __future__ import annotations

import re

import pytest

from relayline.shared.ids import (
    MESSAGE_ID,
    RUN_ID,
    THREAD_ID,
    THREAD_ID_PATTERN,
    invalid_thread_id,
    is_thread_id,
    new_id,
    new_run_id,
)


@pytest.mark.parametrize(
    "value",
    ["a", "demo-0f3a", "A.b_c-1", "x" * 128, "__LOCALID_72bo6t6k2b"],  # assistant-ui's
)
def test_thread_ids_that_pass(value: str) -> None:
    assert is_thread_id(value)


@pytest.mark.parametrize("value", ["", "-a", ".a", "a/b", "a b", "x" * 129, "abc\n", "é", None, 7])
def test_thread_ids_that_fail(value: object) -> None:
    assert not is_thread_id(value)


def test_the_pattern_is_the_rule_a_browser_gets() -> None:
    # The page builds new RegExp(`^(?:${pattern})$`); Python reads the same source alike.
    browser = re.compile(f"^(?:{THREAD_ID_PATTERN})$")
    for value in ("demo-0f3a", "a/b", "-a", "x" * 129, "__LOCALID_72bo6t6k2b"):
        assert bool(browser.match(value)) == is_thread_id(value)


def test_run_and_message_ids() -> None:
    assert RUN_ID.match("run_0f3a") and not RUN_ID.match("run.0f3a")
    assert MESSAGE_ID.match("msg 1") and not MESSAGE_ID.match("msg\n")


def test_minted_ids() -> None:
    assert re.fullmatch(r"msg_[0-9a-f]{24}", new_id("msg"))
    assert re.fullmatch(r"run_[0-9a-f]{32}", new_run_id())
    assert new_id("msg") != new_id("msg")
    assert is_thread_id(new_run_id()) and RUN_ID.match(new_run_id())


def test_the_error_names_the_value() -> None:
    assert THREAD_ID.match("a/b") is None
    assert "'a/b'" in invalid_thread_id("a/b")
