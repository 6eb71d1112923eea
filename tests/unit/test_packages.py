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


def test_the_redis_doc_lists_every_key_relayline_writes() -> None:
    from relayline.channels.keys import KEYS

    doc = (REPO / "docs" / "redis.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `relayline:")]
    expected = [
        f"| `{k.name}` | {k.type} | {k.lifetime} | {k.writer} | {k.readers} |" for k in KEYS
    ]
    assert rows == expected


def test_only_the_keys_module_spells_a_redis_key() -> None:
    product = [p for p in _python_sources() if p.parts[len(REPO.parts)] in FORMER_TOP_LEVEL]
    spelled = [
        f"{path.relative_to(REPO)}:{number}"
        for path in product
        if path != REPO / "channels" / "keys.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if '"relayline:' in line or "'relayline:" in line
    ]
    assert spelled == []


def test_every_key_builder_is_used_outside_the_keys_module() -> None:
    from relayline.channels import keys

    builders = [
        name
        for name, value in vars(keys).items()
        if (callable(value) and name.endswith("_key")) or name.isupper()
        if name not in {"KEYS"}
    ]
    sources = "\n".join(
        p.read_text()
        for p in _python_sources()
        if p.parts[len(REPO.parts)] in FORMER_TOP_LEVEL and p != REPO / "channels" / "keys.py"
    )
    assert [name for name in builders if name not in sources] == []
