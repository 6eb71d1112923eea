"""Every code block of the README and of docs/ runs, as its marker says
(tests/support/doc_snippets.py lists the kinds), so the docs cannot rot:

- python: executed in a directory of its own (``python F`` also saved as F for the run
  blocks that name it);
- shell: executed by bash in a scratch copy of the repository;
- run: started from the repository's root as a reader would (with a free PORT, a scratch
  database and, for ``run F``, F on the Python path); it must serve ``/readyz`` and load
  its agent, and stop cleanly on SIGTERM (Ctrl-C);
- curl: executed against the stack that the README's own run block (``scripts/run``)
  started, its address put in place of 127.0.0.1:8000;
- ci: the command .ci/run executes;
- excerpt: JavaScript that parses as a module (``node --check``), or JSX whose lines
  are a verbatim excerpt of a page a contract test drives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.doc_snippets import Snippet, of_kind
from tests.support.soketi import free_port
from tests.support.stack import ROOT

pytestmark = pytest.mark.integration

#: what the docs write for the address of the server that `scripts/run` starts
DOCS_ADDRESS = "127.0.0.1:8000"
#: where the pages that contract and browser tests drive live
TESTED_PAGES = (ROOT / "tests" / "contract", ROOT / "tests" / "browser", ROOT / "web" / "static")
START_TIMEOUT = 240.0  # scripts/run installs first (about 20 s with a warm pip cache)


def _ids(snippets: list[Snippet]) -> list[str]:
    return [s.where for s in snippets]


def _reader_env(**extra: str) -> dict[str, str]:
    """This process's environment without the services of the test session: what a
    reader's shell has."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("RELAYLINE_", "CELERY_", "PUSHER_", "MERCURE_", "OTEL_"))
        and name not in {"REDIS_URL", "DATABASE_URL", "SECRET_KEY", "PORT", "PYTHONPATH"}
    }
    return {**env, **extra}


# ---------------------------------------------------------------- python


@pytest.mark.parametrize("snippet", of_kind("python"), ids=_ids(of_kind("python")))
def test_python_block_runs(
    snippet: Snippet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a reader would paste it, in a directory of its own; relayline's Celery app
    # (embedding blocks) needs a broker URL, not a broker.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    exec(compile(snippet.code, snippet.where, "exec"), {"__name__": "docs_snippet"})


# ---------------------------------------------------------------- shell


@pytest.fixture(scope="module")
def repository_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files (tracked and new, not ignored) with its .venv linked."""
    copy = tmp_path_factory.mktemp("repository") / "relayline"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name, follow_symlinks=False)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    return copy


@pytest.mark.timeout(600)
@pytest.mark.parametrize("snippet", of_kind("shell"), ids=_ids(of_kind("shell")))
def test_shell_block_runs(snippet: Snippet, repository_copy: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", snippet.code],
        cwd=repository_copy,
        env=_reader_env(),
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, f"{snippet.where}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


# ---------------------------------------------------------------- run and curl


class Started:
    """A run block, started from the repository's root in a session of its own."""

    def __init__(self, snippet: Snippet, workdir: Path, python_files: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "run.log"
        for name in snippet.args:
            assert name in python_files, f"{snippet.where} runs {name}, which no block gives"
            (workdir / name).write_text(python_files[name], encoding="utf-8")
        env = _reader_env(
            PORT=str(self.port),
            DATABASE_URL=f"sqlite:///{workdir / 'relayline.db'}",
            **({"PYTHONPATH": str(workdir)} if snippet.args else {}),
        )
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["bash", "-c", snippet.code.strip()],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # SIGTERM to its group is Ctrl-C in a terminal
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait_ready(self) -> dict[str, Any]:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"it exited:\n{self.output()}"
            try:
                ready = requests.get(f"{self.url}/readyz", timeout=10)
                if ready.status_code == 200:
                    body: dict[str, Any] = ready.json()
                    return body
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or its first model preflight under way
            time.sleep(0.25)  # polling for the server, bounded by the deadline
        raise AssertionError(f"{self.url}/readyz never answered 200:\n{self.output()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError(f"it did not stop on SIGTERM:\n{self.output()}") from None


def _python_files() -> dict[str, str]:
    return {s.args[0]: s.code for s in of_kind("python") if s.args}


def _check_serving(started: Started) -> None:
    ready = started.wait_ready()
    problems = ready["model"]["problems"]
    assert not [p for p in problems if p["code"] == "agent_unavailable"], problems
    agent = requests.get(f"{started.url}/agent/default", timeout=10)
    assert agent.status_code == 200, agent.text  # the agent loaded in the web


def _readme_run_block() -> Snippet:
    return next(s for s in of_kind("run") if s.page.name == "README.md" and not s.args)


def _other_run_blocks() -> list[Snippet]:
    return [s for s in of_kind("run") if s != _readme_run_block()]


@pytest.fixture(scope="module")
def readme_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    """The README's first command (``scripts/run``), as a reader runs it."""
    started = Started(_readme_run_block(), tmp_path_factory.mktemp("readme-run"), {})
    try:
        _check_serving(started)
        yield started
    finally:
        assert started.stop() == 0, started.output()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("snippet", _other_run_blocks(), ids=_ids(_other_run_blocks()))
def test_run_block_serves_and_stops(snippet: Snippet, tmp_path: Path) -> None:
    started = Started(snippet, tmp_path, _python_files())
    try:
        _check_serving(started)
    finally:
        code = started.stop()
    assert code == 0, started.output()


@pytest.mark.timeout(600)
def test_the_readme_run_block_serves_the_demo(readme_stack: Started) -> None:
    page = requests.get(readme_stack.url + "/", timeout=10)
    assert page.status_code == 200 and "<title>relayline demo</title>" in page.text
    assert "embedded Redis on 127.0.0.1:" in readme_stack.output()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("snippet", of_kind("curl"), ids=_ids(of_kind("curl")))
def test_curl_block_runs_against_the_readme_stack(snippet: Snippet, readme_stack: Started) -> None:
    assert DOCS_ADDRESS in snippet.code, f"{snippet.where} names the server as {DOCS_ADDRESS}"
    code = snippet.code.replace(DOCS_ADDRESS, f"127.0.0.1:{readme_stack.port}")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        env=_reader_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{snippet.where}: {done.stderr}\n{done.stdout[-2000:]}"
    assert done.stdout.strip(), f"{snippet.where} printed nothing"
    if "data: " in done.stdout:  # a stream: it ended the protocol's way, without an error
        last = json.loads(done.stdout.strip().splitlines()[-1].removeprefix("data: "))
        assert last["type"] in {"done", "finish", "RUN_FINISHED"}, last
        assert "RUN_ERROR" not in done.stdout and '"type":"error"' not in done.stdout


# ---------------------------------------------------------------- ci


@pytest.mark.parametrize("snippet", of_kind("ci"), ids=_ids(of_kind("ci")))
def test_ci_block_is_what_ci_runs(snippet: Snippet) -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    executed = [line.removeprefix("exec ").strip() for line in ci if line.startswith("exec ")]
    assert executed == [snippet.code.strip()]
    assert os.access(ROOT / snippet.code.strip(), os.X_OK)


# ---------------------------------------------------------------- excerpt


def _tested_sources() -> Iterator[Path]:
    for top in TESTED_PAGES:
        for path in top.rglob("*"):
            if path.suffix in {".js", ".mjs", ".jsx", ".ts", ".tsx"} and (
                "node_modules" not in path.parts and "dist" not in path.parts
            ):
                yield path


def _lines(code: str) -> list[str]:
    return [s for line in code.splitlines() if (s := line.strip()) and not s.startswith("//")]


def _is_excerpt_of_a_tested_page(code: str) -> bool:
    wanted = _lines(code)
    for path in _tested_sources():
        have = _lines(path.read_text(encoding="utf-8"))
        for start in range(len(have) - len(wanted) + 1):
            if have[start : start + len(wanted)] == wanted:
                return True
    return False


@pytest.mark.parametrize("snippet", of_kind("excerpt"), ids=_ids(of_kind("excerpt")))
def test_excerpt_parses_or_is_a_tested_page(snippet: Snippet, tmp_path: Path) -> None:
    assert snippet.lang in {"js", "jsx", "ts", "tsx", "javascript"}, snippet.where
    if snippet.lang in {"jsx", "tsx"}:
        assert _is_excerpt_of_a_tested_page(snippet.code), (
            f"{snippet.where}: not a verbatim excerpt of a page under tests/contract, "
            "tests/browser or web/static"
        )
        return
    node = shutil.which("node")
    assert node is not None, "node (20+) is needed to parse the docs' JavaScript"
    module = tmp_path / "snippet.mjs"
    module.write_text(snippet.code, encoding="utf-8")
    done = subprocess.run(
        [node, "--check", str(module)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{snippet.where} does not parse: {done.stderr}"
