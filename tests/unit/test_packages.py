"""relayline is one package: the repository's web/, worker/, channels/ and shared/ are
``relayline.web`` and so on (symbolic links in relayline/), and no code names them as
top-level packages, which a host application's own ``worker.py`` or ``web/`` would shadow.
The wheel itself is checked by tests/integration/test_wheel.py."""

from __future__ import annotations

import ast
import importlib
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBPACKAGES = ["shared", "channels", "worker", "web"]
FORMER_TOP_LEVEL = frozenset(SUBPACKAGES)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage_is_the_repository_folder(name: str) -> None:
    module = importlib.import_module(f"relayline.{name}")
    assert module.__file__ is not None, f"relayline.{name} is a namespace package"
    assert Path(module.__file__).resolve() == REPO / name / "__init__.py"
    assert (REPO / "relayline" / name).is_symlink()


def _python_sources() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return [REPO / name for name in listed if not (REPO / name).is_symlink()]


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_code_imports_a_former_top_level_package() -> None:
    wrong = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in _python_sources()
        for line, name in _imported(ast.parse(path.read_text(), str(path)))
        if name.split(".")[0] in FORMER_TOP_LEVEL
    ]
    assert not wrong, "import relayline.<name> instead:\n" + "\n".join(wrong)


def test_no_subpackage_imports_the_public_face() -> None:
    # `from relayline import X` inside relayline.web (say) would tie the internals to the
    # public module, which imports them lazily; the import-linter contract covers the CLI
    # and the demo agent, this the top-level module itself.
    wrong = [
        f"{path.relative_to(REPO)}:{line}"
        for name in SUBPACKAGES
        for path in sorted((REPO / name).rglob("*.py"))
        for line, module in _imported(ast.parse(path.read_text(), str(path)))
        if module == "relayline"
    ]
    assert not wrong, wrong
