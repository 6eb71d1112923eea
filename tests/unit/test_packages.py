"""The top-level packages resolve to this repository, never to a same-named PyPI package."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["shared", "channels", "worker", "web"]


@pytest.mark.parametrize("name", PACKAGES)
def test_package_imports_from_this_repository(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None, f"{name} is a namespace package, not ours"
    path = Path(module.__file__).resolve()
    assert path == REPO / name / "__init__.py"
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin).resolve() == path
    assert [Path(p).resolve() for p in module.__path__] == [REPO / name]


@pytest.mark.parametrize("name", PACKAGES)
def test_only_relayline_provides_the_package(name: str) -> None:
    providers = importlib.metadata.packages_distributions().get(name, [])
    assert set(providers) <= {"relayline"}
