"""``web/static/relayline-consumer.js`` type-checks cleanly from its JSDoc annotations.

The consumer ships as plain JavaScript (no build step), so its types live in JSDoc
comments. ``tests/node/typecheck`` pins TypeScript in a committed lock file and its
``tsconfig.json`` runs ``tsc --noEmit`` with ``allowJs``/``checkJs`` and ``strict`` plus
``exactOptionalPropertyTypes``, ``noUncheckedIndexedAccess``, ``noImplicitReturns``,
``noImplicitOverride``, ``noFallthroughCasesInSwitch``, ``noUnusedLocals`` and
``noUnusedParameters``, against the ``es2022`` and ``dom`` libraries only (no
``@types`` packages: the consumer runs in browsers and Node alike). Any diagnostic
fails the test. A missing ``node`` or ``npm`` fails it too, never skips it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tests" / "node" / "typecheck"
CONSUMER = ROOT / "web" / "static" / "relayline-consumer.js"
#: seconds ``npm ci`` and one ``tsc`` run may take (the machine is loaded at times)
NPM_CI_TIMEOUT = 300
TSC_TIMEOUT = 120


@pytest.fixture(scope="module")
def tsc() -> list[str]:
    """The command that runs the pinned ``tsc``, installed from the lock file if needed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are required to type-check web/static/relayline-consumer.js")
    pinned = json.loads((PACKAGE / "package.json").read_text())["devDependencies"]["typescript"]
    installed = PACKAGE / "node_modules" / "typescript" / "package.json"
    if not installed.is_file() or json.loads(installed.read_text())["version"] != pinned:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=PACKAGE,
            capture_output=True,
            text=True,
            timeout=NPM_CI_TIMEOUT,
        )
        assert done.returncode == 0, f"npm ci failed in {PACKAGE}:\n{done.stdout}\n{done.stderr}"
    return [node, str(PACKAGE / "node_modules" / "typescript" / "bin" / "tsc")]


def _run(tsc: list[str], *args: str, cwd: Path = PACKAGE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tsc, "--pretty", "false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TSC_TIMEOUT,
    )


def test_the_consumer_type_checks_under_strict_options(tsc: list[str]) -> None:
    listed = _run(tsc, "--project", "tsconfig.json", "--listFilesOnly")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    checked = {Path(line).resolve() for line in listed.stdout.splitlines() if line}
    assert CONSUMER.resolve() in checked, f"tsconfig.json leaves the consumer out:\n{listed.stdout}"

    done = _run(tsc, "--project", "tsconfig.json")
    assert done.returncode == 0, f"tsc reported errors:\n{done.stdout}{done.stderr}"
    assert done.stdout.strip() == "", done.stdout


def test_the_same_configuration_rejects_a_wrong_annotation(tsc: list[str], tmp_path: Path) -> None:
    """The configuration really checks JavaScript: a JSDoc type the code contradicts,
    in a file that is otherwise the consumer, is an error."""
    probe = tmp_path / "probe.js"
    wrong = "\n/** @type {number} */\nexport const notANumber = 'text';\n"
    probe.write_text(CONSUMER.read_text(encoding="utf-8") + wrong, encoding="utf-8")
    config = tmp_path / "tsconfig.json"
    config.write_text(
        json.dumps({"extends": str(PACKAGE / "tsconfig.json"), "files": [str(probe)]}),
        encoding="utf-8",
    )
    done = _run(tsc, "--project", str(config), cwd=tmp_path)
    assert done.returncode != 0, "tsc accepted a string typed as a number"
    assert "TS2322" in done.stdout, done.stdout
    assert done.stdout.count("error TS") == 1, f"one error was expected:\n{done.stdout}"
