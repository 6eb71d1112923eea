"""scripts/bootstrap runs pip only when it has something to do (issue 32): a stamp per
extras set records the pyproject.toml and interpreter it installed from; a later run with
the same inputs, for the same extras or fewer, starts no pip at all.

The repository here is a copy of the two scripts beside a pyproject.toml of the test's
own, and its .venv's python records each install it is asked for, and each pip command,
without running them (the rest it passes to this interpreter): what is checked is
whether bootstrap asks, not pip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = """#!/bin/sh
if [ "$1" = "scripts/install_progress.py" ]; then
  shift 3; echo "$*" >> "$(dirname "$0")/../installs"; exit 0
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then  # pip itself: recorded, never run
  echo "pip $*" >> "$(dirname "$0")/../installs"; exit 0
fi
exec {python} "$@"
"""


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("bootstrap", "install_progress.py"):
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    return repo


def bootstrap(repo: Path, *extras: str) -> list[str]:
    """Run it; the installs asked for so far."""
    done = subprocess.run(
        [str(repo / "scripts" / "bootstrap"), *extras], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [line for line in _asked(repo) if not line.startswith("pip ")]


def _asked(repo: Path) -> list[str]:
    """Every pip command and install asked for so far, in order."""
    installs = repo / ".venv" / "installs"
    return installs.read_text().splitlines() if installs.exists() else []


def test_pip_runs_once_per_extras_and_again_when_pyproject_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    assert bootstrap(repo, "embedded") == ["-e .[embedded]"]
    assert bootstrap(repo, "embedded") == ["-e .[embedded]"]  # nothing changed: no pip
    assert bootstrap(repo) == ["-e .[embedded]", "-e .[dev,embedded]"]
    # dev,embedded covers embedded: the run command needs no install after the tests'.
    (repo / ".venv" / ".relayline-installed-embedded").unlink()
    assert len(bootstrap(repo, "embedded")) == 2
    with (repo / "pyproject.toml").open("a") as pyproject:
        pyproject.write('description = "changed"\n')
    assert bootstrap(repo, "embedded")[-1] == "-e .[embedded]"
    assert len(bootstrap(repo, "embedded")) == 3


def test_pip_itself_is_upgraded_before_an_install(tmp_path: Path) -> None:
    """A venv's own pip may be old (23.x on these machines), and its resolver gives up on
    the dev extras where a current pip does not: each install starts with an upgrade."""
    repo = make_repo(tmp_path)
    bootstrap(repo, "embedded")
    bootstrap(repo, "embedded")  # nothing to do: no pip at all
    assert _asked(repo) == ["pip -m pip install --quiet --upgrade pip", "-e .[embedded]"]
