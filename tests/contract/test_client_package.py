"""The browser client as an npm package (issue 31, part 5): ``client/`` packed with
``npm pack``, installed from the tarball into scratch projects, type-checked by
TypeScript against its declarations, and used by Node against a running stack.

- The tarball holds ``web/static/relayline-consumer.js`` and ``relayline-agent.js``
  byte for byte (the files the web app serves) and declarations tsc generated from
  their JSDoc.
- Installed alone, the consumer loads with nothing else installed; the agent entry
  point asks for its optional peer ``@ag-ui/client``.
- ``tests/contract/client-package`` (a locked TypeScript project) type-checks with
  ``tsc --noEmit`` under strict options for Node and, for the consumer, for a browser
  (DOM library, no Node types), including uses that must be type errors.
- Compiled, its Node tests read one relayed AG-UI turn with ``RelaylineAgent`` and one
  native turn pushed through a real Mercure hub with ``subscribeToMercure`` and
  ``createProtocolStream``, from a real web app, Celery worker and Redis; the stack
  serves the same files as the package carries.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import requests

from tests.contract.push_agent import LONG_ANSWER
from tests.support.mercure_hub import MercureHub
from tests.support.node_suites import install_node_packages, require_executable, run_node_tests
from tests.support.push_stack import push_stack
from tests.support.redis_server import RedisDatabases
from tests.support.stack import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.contract]

CLIENT = ROOT / "client"
SCRATCH = Path(__file__).parent / "client-package"
STATIC = ROOT / "web" / "static"
#: what the package exports, as web/static names the files
MODULES = ("relayline-consumer.js", "relayline-agent.js")
AGENT = "tests.contract.push_agent:push_spec"
#: seconds one npm or tsc command may take (the machine is loaded at times)
COMMAND_TIMEOUT = 300.0
SUITE_TIMEOUT = 300.0
#: the Node tests of the scratch project: one relayed turn, one pushed through Mercure
NODE_TESTS = 2


@dataclasses.dataclass(frozen=True)
class Packed:
    tarball: Path
    files: frozenset[str]  # as ``npm pack --json`` lists them


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed in {cwd} (exit {done.returncode}):\n"
        f"{done.stdout[-6000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    )
    return done


def _npm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run([require_executable("npm"), *args, "--no-audit", "--no-fund"], cwd)


@pytest.fixture(scope="module")
def packed(node: str, tmp_path_factory: pytest.TempPathFactory) -> Packed:
    """``npm pack`` of client/ (its prepack builds dist/ from web/static)."""
    install_node_packages(CLIENT)
    out = tmp_path_factory.mktemp("pack")
    done = _npm("pack", "--json", "--pack-destination", str(out), cwd=CLIENT)
    (report,) = json.loads(done.stdout)
    return Packed(out / report["filename"], frozenset(f["path"] for f in report["files"]))


@pytest.fixture(scope="module")
def scratch(packed: Packed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The locked TypeScript project, copied out, installed, plus the tarball."""
    project = tmp_path_factory.mktemp("scratch") / "project"
    shutil.copytree(SCRATCH, project, ignore=shutil.ignore_patterns("node_modules", "build"))
    _npm("ci", cwd=project)
    _npm("install", "--no-save", str(packed.tarball), cwd=project)
    return project


def _tsc(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tsc = project / "node_modules" / "typescript" / "bin" / "tsc"
    return _run([require_executable("node"), str(tsc), "--pretty", "false", *args], project)


@pytest.fixture(scope="module")
def answer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("answer") / "answer.txt"
    path.write_bytes(LONG_ANSWER.encode("utf-8"))  # bytes: no newline translation
    return path


def test_the_tarball_carries_the_served_files_and_their_declarations(packed: Packed) -> None:
    declarations = {f"dist/{name.removesuffix('.js')}.d.ts" for name in MODULES}
    assert packed.files == {
        "package.json",
        "README.md",
        *(f"dist/{name}" for name in MODULES),
        *declarations,
    }
    with tarfile.open(packed.tarball) as tar:
        for name in MODULES:
            member = tar.extractfile(f"package/dist/{name}")
            assert member is not None
            assert member.read() == (STATIC / name).read_bytes(), f"dist/{name} != web/static"
        for path in declarations:
            member = tar.extractfile(f"package/{path}")
            assert member is not None
            assert b"export " in member.read(), f"{path} declares nothing"
        shipped = tar.extractfile("package/package.json")
        assert shipped is not None
        manifest = json.loads(shipped.read())
    assert manifest == json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))


@pytest.mark.timeout(COMMAND_TIMEOUT * 2)
def test_the_consumer_loads_with_nothing_else_installed(
    packed: Packed, node: str, tmp_path: Path
) -> None:
    """No runtime dependency: the tarball installs offline into an empty project, the
    consumer imports, and only the agent entry point asks for ``@ag-ui/client``."""
    (tmp_path / "package.json").write_text('{"private": true, "type": "module"}\n')
    _npm("install", "--offline", str(packed.tarball), cwd=tmp_path)
    installed = sorted(p.name for p in (tmp_path / "node_modules").iterdir() if p.name[0] != ".")
    assert installed == ["@relayline"]
    assert [p.name for p in (tmp_path / "node_modules" / "@relayline").iterdir()] == ["client"]

    consumer = _run(
        [
            node,
            "--input-type=module",
            "-e",
            "console.log(Object.keys(await import('@relayline/client')).sort().join(','))",
        ],
        tmp_path,
    )
    assert consumer.stdout.split() == [
        "createChannelConsumer,createProtocolStream,encodeSSE,envelopesRecovery,"
        "subscribeToMercure,subscribeToPusher,toSSEStream"
    ]
    agent = subprocess.run(
        [node, "--input-type=module", "-e", "await import('@relayline/client/agent')"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert agent.returncode != 0
    assert "ERR_MODULE_NOT_FOUND" in agent.stderr and "'@ag-ui/client'" in agent.stderr, (
        agent.stderr
    )


@pytest.mark.timeout(COMMAND_TIMEOUT * 4)
def test_typescript_projects_type_check_against_the_declarations(scratch: Path) -> None:
    """Node (tsconfig.json: the tests and src/types-probe.ts, whose wrong uses must be
    errors) and a browser page (tsconfig.browser.json: DOM library, no Node types)."""
    listed = _tsc(scratch, "--project", "tsconfig.json", "--listFilesOnly")
    checked = {
        Path(line).relative_to(scratch).as_posix() for line in listed.stdout.splitlines() if line
    }
    package = "node_modules/@relayline/client/dist"
    assert {f"{package}/relayline-consumer.d.ts", f"{package}/relayline-agent.d.ts"} <= checked
    assert "src/types-probe.ts" in checked

    for config in ("tsconfig.json", "tsconfig.browser.json"):
        done = _tsc(scratch, "--noEmit", "--project", config)
        assert done.stdout == "", done.stdout


@pytest.mark.timeout(SUITE_TIMEOUT + COMMAND_TIMEOUT + 180)
def test_the_installed_package_reads_a_relayed_and_a_mercure_stream(
    scratch: Path,
    node: str,
    hub: MercureHub,
    answer_file: Path,
    redis_databases: RedisDatabases,
    tmp_path: Path,
) -> None:
    _tsc(scratch, "--project", "tsconfig.json")  # compiled to build/
    with push_stack(tmp_path, redis_databases, hub=hub, RELAYLINE_AGENT=AGENT) as stack:
        installed = scratch / "node_modules" / "@relayline" / "client" / "dist"
        for name in MODULES:
            served = requests.get(f"{stack.web.url}/demo/static/{name}", timeout=30)
            assert served.status_code == 200
            assert served.content == (installed / name).read_bytes(), f"/demo/static/{name}"
        done, summary = run_node_tests(
            node,
            scratch,
            sorted((scratch / "build").glob("*.test.js")),
            env={
                "RELAYLINE_BASE_URL": stack.web.url,
                "RELAYLINE_MERCURE_PUBLISHER_KEY": hub.publisher_key,
                "RELAYLINE_ANSWER_FILE": str(answer_file),
            },
            timeout=SUITE_TIMEOUT,
        )
    report = f"{done.stdout[-20000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert summary.passed == summary.tests == NODE_TESTS, report
    assert summary.skipped == summary.todo == summary.cancelled == 0, report
