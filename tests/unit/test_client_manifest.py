"""``client/package.json`` (the npm package ``@relayline/client``) agrees with the
Python package and with the files it is built from, without running npm.

- Its version is ``relayline.__version__`` in semver spelling (``0.3.0.dev0`` is
  ``0.3.0-dev.0``), in the manifest and in its lock file.
- ``exports`` names ``.`` (the push consumer) and ``./agent`` (``RelaylineAgent``),
  each a file of ``dist/`` that the build copies from ``web/static/`` with its
  declarations beside it (the ``types`` condition first, as TypeScript requires).
- It ships ``dist/`` only, has no runtime dependency, and ``@ag-ui/client`` (which
  only the agent imports) is an optional peer.

``tests/contract/test_client_package.py`` packs, installs and uses the package.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import TypedDict

import pytest

import relayline

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
STATIC = ROOT / "web" / "static"
#: the modules the package exports, by subpath, as web/static names them
EXPORTED = {".": "relayline-consumer.js", "./agent": "relayline-agent.js"}

_PEP440 = re.compile(
    r"(?P<release>\d+\.\d+\.\d+)(?:(?P<pre>a|b|rc)(?P<pre_n>\d+))?(?:\.dev(?P<dev>\d+))?"
)
_SEMVER_PRE = {"a": "alpha", "b": "beta", "rc": "rc"}


class Conditions(TypedDict):
    types: str
    default: str


class Manifest(TypedDict, total=False):
    name: str
    version: str
    license: str
    type: str
    engines: dict[str, str]
    exports: dict[str, Conditions | str]
    files: list[str]
    scripts: dict[str, str]
    dependencies: dict[str, str]
    peerDependencies: dict[str, str]
    peerDependenciesMeta: dict[str, dict[str, bool]]
    devDependencies: dict[str, str]


def npm_version(python_version: str) -> str:
    """A PEP 440 version of the forms relayline uses, in semver spelling."""
    found = _PEP440.fullmatch(python_version)
    if found is None:
        raise ValueError(f"no semver spelling for {python_version!r}")
    labels = []
    if found["pre"]:
        labels.append(f"{_SEMVER_PRE[found['pre']]}.{found['pre_n']}")
    if found["dev"]:
        labels.append(f"dev.{found['dev']}")
    return found["release"] + (f"-{'.'.join(labels)}" if labels else "")


def _manifest() -> Manifest:
    loaded: Manifest = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize(
    ("python", "npm"),
    [
        ("0.3.0.dev0", "0.3.0-dev.0"),
        ("0.3.0", "0.3.0"),
        ("1.2.3rc1", "1.2.3-rc.1"),
        ("1.2.3b2.dev4", "1.2.3-beta.2.dev.4"),
    ],
)
def test_npm_version_spells_pep440_as_semver(python: str, npm: str) -> None:
    assert npm_version(python) == npm


def test_npm_version_refuses_what_it_cannot_spell() -> None:
    with pytest.raises(ValueError, match="no semver spelling"):
        npm_version("1.0.post1")


def test_the_package_version_is_relaylines() -> None:
    expected = npm_version(relayline.__version__)
    assert _manifest()["version"] == expected
    lock = json.loads((CLIENT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["version"] == expected
    assert lock["packages"][""]["version"] == expected


def test_the_package_is_named_and_licensed_as_the_project() -> None:
    manifest = _manifest()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["name"] == "@relayline/client"
    assert manifest["license"] == pyproject["project"]["license"]
    assert manifest["type"] == "module"


def test_exports_are_built_files_of_web_static_with_declarations() -> None:
    exports = _manifest()["exports"]
    assert set(exports) == {*EXPORTED, "./package.json"}
    assert exports["./package.json"] == "./package.json"
    for subpath, name in EXPORTED.items():
        conditions = exports[subpath]
        assert isinstance(conditions, dict)
        assert list(conditions) == ["types", "default"], "types must come first"
        assert conditions["default"] == f"./dist/{name}"
        assert conditions["types"] == f"./dist/{name.removesuffix('.js')}.d.ts"
        assert (STATIC / name).is_file()

    # the build copies exactly these from web/static and declares their copies
    build = (CLIENT / "scripts" / "build.mjs").read_text(encoding="utf-8")
    listed = re.search(r"const MODULES = \[(.*?)\];", build)
    assert listed is not None
    assert re.findall(r"'([^']+)'", listed[1]) == list(EXPORTED.values())
    tsconfig = json.loads((CLIENT / "tsconfig.json").read_text(encoding="utf-8"))
    assert tsconfig["files"] == [f"dist/{name}" for name in EXPORTED.values()]


def test_only_dist_ships_and_nothing_is_required_at_run_time() -> None:
    manifest = _manifest()
    assert manifest["files"] == ["dist"]
    assert "dependencies" not in manifest
    assert manifest["scripts"]["prepack"] == "node scripts/build.mjs"
    assert set(manifest["peerDependencies"]) == {"@ag-ui/client"}
    assert manifest["peerDependenciesMeta"] == {"@ag-ui/client": {"optional": True}}
    # the consumer itself imports nothing
    consumer = (STATIC / EXPORTED["."]).read_text(encoding="utf-8")
    assert re.search(r"^\s*import\b", consumer, flags=re.MULTILINE) is None
    # build tools are pinned exactly, as the lock file holds them
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in manifest["devDependencies"].values())
