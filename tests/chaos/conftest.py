"""The chaos suite: fault scenarios with real processes (workers SIGKILLed, PostgreSQL
and Redis restarted, racing submissions, bursts). Each test reports its figures
(tests.support.chaos.report); they are repeated here at the end of the run."""

from __future__ import annotations

import pytest
from _pytest.terminal import TerminalReporter

from tests.support.chaos import FIGURES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/chaos/" in item.nodeid:
            item.add_marker(pytest.mark.chaos)
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("chaos figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
