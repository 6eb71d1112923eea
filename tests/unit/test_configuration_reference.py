"""The configuration reference (issue 32): generated from ``Settings``, it names every
variable settings.py reads, ``relayline config`` prints it, and docs/configuration.md
is its latest output."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from relayline.cli import main
from relayline.shared import config_reference, settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
REGENERATE = "python -m relayline.shared.config_reference > docs/configuration.md"


def read_variables() -> set[str]:
    """Every variable name settings.py reads the environment by."""
    source = inspect.getsource(settings)
    names = set(re.findall(r'\bget\("([A-Z][A-Z0-9_]+)"\)', source))
    names |= set(re.findall(r'_limit\(env, "([A-Z][A-Z0-9_]+)"\)', source))
    return names | set(settings.MODEL_KEY_VARIABLES)


def test_every_variable_settings_reads_is_in_the_reference_with_a_meaning() -> None:
    listed = config_reference.variable_names()
    assert read_variables() - listed == set()
    for section in config_reference.reference():
        for variable in section.variables:
            assert variable.meaning.strip(), variable.name
            assert variable.default, variable.name


def test_the_docs_page_is_the_generators_output() -> None:
    assert DOCS.exists(), f"missing {DOCS}: run {REGENERATE}"
    assert DOCS.read_text() == config_reference.as_markdown(), (
        f"docs/configuration.md is out of date: run {REGENERATE}"
    )


def test_relayline_config_lists_each_variable_with_its_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config"]) == 0
    printed = capsys.readouterr().out
    for name in read_variables():
        assert re.search(rf"^{name} \[", printed, re.MULTILINE), name
    assert "RELAYLINE_WORKER_POOL [gevent]" in printed
    assert "RELAYLINE_LOG_LINGER_MS [5]" in printed  # milliseconds, as the variable is read
    assert "one of WORKER_POOLS (gevent, threads, prefork)" in printed
