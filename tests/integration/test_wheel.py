"""The release: ``python -m build`` makes a wheel and an sdist that ``twine check``
passes; the wheel holds one top-level package, ``relayline`` (its migrations, demo page and
browser client included), and the sdist builds a wheel of the same content. Installed into
a fresh virtual environment beside a host application whose own ``worker.py``, ``web/``,
``shared/`` and ``channels/`` come first on ``sys.path``, relayline embeds there: the
host's Celery worker with relayline's tasks registered runs one turn that the host's Flask
app (the ``Relayline`` extension) relays.

Building copies the files of this checkout to a scratch folder first, so that nothing
(``build/``, ``*.egg-info``) is written into the repository."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import relayline
from relayline.shared.persistence import Store
from tests.support.host_app import HostWorker
from tests.support.redis_server import RedisDatabases
from tests.support.stack import ROOT

pytestmark = pytest.mark.integration

#: what the build reads: the project files and the package (its subpackages are links)
SOURCES = ("pyproject.toml", "README.md", "MANIFEST.in", "relayline")
SUBPACKAGES = ("web", "worker", "channels", "shared")
QUEUE = "relayline-wheel"


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path
    direct_wheel: Path  # built from the source tree, not from the sdist


def _copy_sources(into: Path) -> None:
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, into / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(source, into / name)
    for name in SUBPACKAGES:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))


def _build(source: Path, outdir: Path, *options: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", *options, "--outdir", str(outdir), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    work = tmp_path_factory.mktemp("release")
    source = work / "src"
    source.mkdir()
    _copy_sources(source)
    # The default build makes the sdist, then the wheel from the unpacked sdist.
    _build(source, work / "dist")
    _build(source, work / "direct", "--wheel")
    (wheel,) = (work / "dist").glob("*.whl")
    (sdist,) = (work / "dist").glob("*.tar.gz")
    (direct,) = (work / "direct").glob("*.whl")
    return Dist(wheel, sdist, direct)


def _contents(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()}


def test_the_wheel_holds_only_relayline(dist: Dist) -> None:
    names = list(_contents(dist.wheel))
    info = f"relayline-{relayline.__version__}.dist-info/"
    assert dist.wheel.name == f"relayline-{relayline.__version__}-py3-none-any.whl"
    assert [n for n in names if not n.startswith(("relayline/", info))] == []
    with zipfile.ZipFile(dist.wheel) as archive:
        assert archive.read(info + "top_level.txt").decode().split() == ["relayline"]
        assert "relayline = relayline.cli:main" in archive.read(info + "entry_points.txt").decode()
    for carried in (
        "relayline/py.typed",
        "relayline/demo_script.json",
        "relayline/web/static/demo.html",
        "relayline/web/static/relayline-consumer.js",
        "relayline/web/static/relayline-agent.js",
        "relayline/shared/persistence/migrations/env.py",
        "relayline/shared/persistence/migrations/versions/0001_initial.py",
        "relayline/worker/tasks.py",
        "relayline/channels/stream/log.py",
    ):
        assert carried in names


def test_the_sdist_builds_the_same_wheel(dist: Dist) -> None:
    assert _contents(dist.wheel) == _contents(dist.direct_wheel)


def test_twine_accepts_both(dist: Dist) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel), str(dist.sdist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


# The host application: modules named as relayline's folders are, first on sys.path.
HOST_FILES = {
    "worker.py": """
        from celery import Celery

        from relayline import register

        import os
        HOST = "worker"
        app = Celery("host", broker=os.environ["CELERY_BROKER_URL"])
        register(app)
        """,
    "web/__init__.py": 'HOST = "web"\n',
    "shared/__init__.py": 'HOST = "shared"\n',
    "channels/__init__.py": 'HOST = "channels"\n',
    "turn.py": """
        import json

        from flask import Flask

        import channels, shared, web, worker
        from relayline import Relayline

        for module in (channels, shared, web, worker):
            assert module.HOST == module.__name__, module  # the host's own, not relayline's

        app = Flask(__name__)
        Relayline(app, current_user=lambda: "host-user")
        client = app.test_client()
        response = client.post("/api/threads/wheel-1/messages", json={"content": "Hi"})
        assert response.status_code == 200, response.get_data(as_text=True)
        events = [
            json.loads(line[len("data: "):])
            for line in response.get_data(as_text=True).splitlines()
            if line.startswith("data: ")
        ]
        print("".join(e["content"] for e in events if e["type"] == "text"))
        """,
}


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and its dependencies, nothing else."""
    where = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    done = subprocess.run(
        [str(where / "bin/python"), "-m", "pip", "install", "--quiet", str(dist.wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return where


def _isolated_env(**extra: str) -> dict[str, str]:
    # Nothing of this checkout leaks in: no PYTHONPATH but the one given.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_only_relayline_is_importable_from_the_install(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "bin/python")
    probe = (
        "import importlib.util, relayline;"
        "print(relayline.__file__);"
        "print([n for n in ('web', 'worker', 'channels', 'shared')"
        " if importlib.util.find_spec(n) is not None])"
    )
    done = subprocess.run(
        [python, "-c", probe],
        cwd=tmp_path,
        env=_isolated_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    where, found = done.stdout.splitlines()
    assert where.startswith(str(venv)) and found == "[]"
    version = subprocess.run(
        [str(venv / "bin/relayline"), "--version"],
        cwd=tmp_path,
        env=_isolated_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.stdout.strip() == f"relayline {relayline.__version__}"


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    for name, text in HOST_FILES.items():
        (host / name).parent.mkdir(parents=True, exist_ok=True)
        (host / name).write_text(textwrap.dedent(text).lstrip())
    return host


@pytest.fixture
def broker(redis_databases: RedisDatabases) -> Iterator[str]:
    with redis_databases.database("wheel host app") as url:
        yield url


def test_a_host_app_with_same_named_modules_embeds_the_wheel(
    venv: Path, host_dir: Path, broker: str, tmp_path: Path
) -> None:
    database_url = f"sqlite:///{tmp_path / 'host.db'}"
    Store(database_url).dispose()  # migrated before the worker and the web touch it
    env = _isolated_env(
        PYTHONPATH=str(host_dir),
        REDIS_URL=broker,
        CELERY_BROKER_URL=broker,
        DATABASE_URL=database_url,
        RELAYLINE_QUEUE=QUEUE,
    )
    python = str(venv / "bin/python")
    log = tmp_path / "worker.log"
    worker = HostWorker("worker", QUEUE, env, log, python=python, cwd=host_dir)
    try:
        turn = subprocess.run(
            [python, "turn.py"], cwd=host_dir, env=env, capture_output=True, text=True, timeout=90
        )
    finally:
        worker.stop()
    assert turn.returncode == 0, turn.stderr[-3000:]
    assert turn.stdout.startswith("Hello! You said: Hi."), turn.stdout
    assert "relayline.run_turn" in log.read_text()  # the host's worker ran it
