"""The ``relayline`` command: up, web, worker, migrate, token, config, demo."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from relayline import __version__, local_stack
from relayline.demo import build
from relayline.shared import config_reference
from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.auth import mint
from relayline.shared.chunks import InterruptEvent, TextChunk, ToolResultChunk
from relayline.shared.interrupts import ApprovalRequest
from relayline.shared.persistence import Store
from relayline.shared.preflight import check_agents
from relayline.shared.registry import AgentRegistry
from relayline.shared.settings import WORKER_POOLS, Settings, child_environment
from relayline.startup import CONFIG_INVALID, database_problem, shown_url

#: simultaneous connections one gevent web worker serves (each SSE stream holds one);
#: above the 5,000 streams one web process is to hold (bench/relay.py part 4)
WORKER_CONNECTIONS = 10_000
#: the exit status of a refused configuration (as of a usage error)
EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="relayline",
        description="Run AI agent turns in background workers and stream them to browsers.",
        epilog="Configuration comes from environment variables: relayline config lists them.",
    )
    parser.add_argument("--version", action="version", version=f"relayline {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in (
        ("up", "run everything on this machine (embedded Redis without REDIS_URL, SQLite)"),
        ("web", "run the web server"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
        command.add_argument("--port", type=int, help="default: PORT, else 8000")
    worker = commands.add_parser("worker", help="run a Celery worker", description=WORKER_HELP)
    worker.add_argument(
        "--concurrency", type=int, help="turns at once (default: RELAYLINE_WORKER_CONCURRENCY)"
    )
    worker.add_argument(
        "--pool",
        choices=WORKER_POOLS,
        help="gevent for I/O-bound turns, threads where nothing may be monkey patched, "
        "prefork for CPU-heavy tools (default: RELAYLINE_WORKER_POOL, else gevent)",
    )
    worker.add_argument(
        "--name",
        help="the worker's node name, unique among the workers of a broker "
        "(default: relayline-<pid>@<host>)",
    )
    commands.add_parser("migrate", help="create or upgrade the database schema")
    token = commands.add_parser("token", help="mint a bearer token for RELAYLINE_AUTH=token")
    token.add_argument("user")
    commands.add_parser(
        "config", help="list every environment variable relayline reads, its default and meaning"
    )
    demo = commands.add_parser("demo", help="run a scripted demo conversation in the terminal")
    demo.add_argument("--database", help="database URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    if args.command == "config":
        sys.stdout.write(config_reference.as_text())
        return 0
    try:
        settings = Settings.from_env()  # after parsing: --help works in any environment
        if args.command == "token":
            # Only a secret token mode would accept can sign (never the development one).
            settings = dataclasses.replace(settings, auth="token")
        if args.command == "worker":
            pool, concurrency = worker_pool(settings, args.pool, args.concurrency)
    except ValueError as exc:
        return refuse_configuration(exc)
    if args.command == "token":
        minted = mint(settings.secret_key, args.user, settings.token_ttl)
        print(minted.token)
        expires = datetime.fromtimestamp(minted.expires_at, UTC).isoformat(timespec="seconds")
        # The token alone on stdout (for scripts); when it lapses on stderr.
        print(f"expires {expires} (RELAYLINE_TOKEN_TTL={settings.token_ttl:g} s)", file=sys.stderr)
        return 0
    if args.command == "demo":
        return run_demo(args.database)
    if (problem := startup_problem(args.command, settings)) is not None:
        print(problem, file=sys.stderr)
        return EXIT_USAGE
    if args.command == "migrate":
        Store(settings.database_url).dispose()
        print(f"database at {shown_url(settings.database_url)} is up to date")
        return 0
    if args.command == "web":
        port = args.port or settings.port
        if (taken := local_stack.port_problem(args.host, port)) is not None:
            print(taken, file=sys.stderr)  # before gunicorn's 5 s of retries
            return EXIT_USAGE
        warn_about_models(settings)
        os.execve(sys.executable, web_command(args.host, port), web_env())
    if args.command == "worker":
        celery = worker_command(pool, concurrency, args.name or default_node_name())
        os.execve(sys.executable, celery, worker_env(pool, concurrency))
    warn_about_models(settings)
    return up(settings, args.host, args.port or settings.port)


WORKER_HELP = (
    "Run a Celery worker that runs turns. Several workers may share a host: each gets a "
    "node name of its own (relayline-<pid>@<host>, or --name)."
)


def startup_problem(command: str, settings: Settings) -> str | None:
    """One line when ``command`` cannot start with these settings: no broker for a web or
    worker, a database it cannot use (``up`` starts its own Redis when REDIS_URL is unset)."""
    if command in ("web", "worker") and settings.broker_url is None:
        return (
            f"relayline: invalid configuration ({CONFIG_INVALID}): relayline {command} "
            "needs REDIS_URL (relayline up starts an embedded Redis when it is unset)."
        )
    return database_problem(settings.database_url)


def default_node_name() -> str:
    """A node name no other worker on this host has: Celery's default, ``celery@<host>``,
    is the same for every worker of a host, and they then trip over each other's
    mailboxes (``ResourceLocked``). The PID is this process's after ``execve`` too;
    Celery expands ``%h`` to the host name."""
    return f"relayline-{os.getpid()}@%h"


def warn_about_models(settings: Settings) -> None:
    """The model preflight before anything starts: one line on stderr per problem that
    would fail every turn (no SDK, no key, nothing at the base URL, an agent that does
    not load), naming what to set. It warns; it never stops the start."""
    for problem in check_agents(AgentRegistry.from_settings(settings)):
        print(problem.line(), file=sys.stderr, flush=True)


def refuse_configuration(exc: ValueError) -> int:
    """A setting refused at startup: one line on stderr, no traceback, and argparse's
    status for unusable input."""
    line = " ".join(str(exc).split())  # one line, whatever the message holds
    print(f"relayline: invalid configuration ({CONFIG_INVALID}): {line}", file=sys.stderr)
    return EXIT_USAGE


def web_command(host: str, port: int) -> list[str]:
    # gevent: one process holds thousands of idle SSE streams; a sync worker holds one.
    return [
        sys.executable, "-m", "gunicorn", "relayline.web.wsgi:app",
        "--worker-class", "gevent", "--workers", "1",
        "--worker-connections", str(WORKER_CONNECTIONS),
        "--bind", f"{host}:{port}", "--timeout", "0", "--graceful-timeout", "5",
    ]  # fmt: skip


#: glibc's allocator for the web: blocks of 128 kB and more are mapped and given back
#: when freed. By default glibc raises this threshold after freeing a large block, and
#: the large frames of slow clients then stay in the heap: 40 clients that never read
#: an 8 MB stream left the web at 10x its idle RSS after they closed, 1.02x with this
#: (bench/slow_clients.py). An operator's own value wins.
WEB_ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": "131072"}


def web_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The web server's environment: ``base`` (else this process's) with the allocator
    setting above unless it sets its own."""
    return {**WEB_ALLOCATOR, **(child_environment() if base is None else base)}


def worker_pool(settings: Settings, pool: str | None, concurrency: int | None) -> tuple[str, int]:
    """The pool and concurrency a worker runs: the options, else the settings (checked
    like the settings, so a bad ``--concurrency`` is the same clear error)."""
    chosen = dataclasses.replace(
        settings,
        worker_pool=pool or settings.worker_pool,
        worker_concurrency=settings.worker_concurrency if concurrency is None else concurrency,
    )
    return chosen.worker_pool, chosen.worker_concurrency


def worker_command(pool: str, concurrency: int, name: str | None = None) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "relayline.worker.app", "worker",
        "--loglevel", "INFO", "--pool", pool, "--concurrency", str(concurrency),
        "--hostname", name or default_node_name(),
    ]  # fmt: skip


def worker_env(pool: str, concurrency: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: worker.app reads its pool from it (Celery lets a
    configured pool override ``--pool prefork``), and its store sizes its pool by it."""
    return {
        **(child_environment() if base is None else base),
        "RELAYLINE_WORKER_POOL": pool,
        "RELAYLINE_WORKER_CONCURRENCY": str(concurrency),
    }


def up(settings: Settings, host: str, port: int) -> int:
    """Everything on one machine: Redis (embedded when REDIS_URL is unset), SQLite,
    migrations, one worker process (the gevent pool: many turns at once) and the web
    server (relayline.local_stack). The URL is printed once the web answers /healthz;
    Ctrl-C stops the web and the worker, then the embedded Redis."""
    if (problem := local_stack.port_problem(host, port)) is not None:
        print(problem, file=sys.stderr)
        return local_stack.EXIT_USAGE
    local_stack.handle_stop_signals()
    embedded: local_stack.EmbeddedRedis | None = None
    children: list[subprocess.Popen[bytes]] = []
    try:
        overrides = {"DATABASE_URL": settings.database_url}
        if settings.redis_url is None:
            embedded = local_stack.EmbeddedRedis()
            overrides["REDIS_URL"] = embedded.url
            print(f"embedded Redis on 127.0.0.1:{embedded.port}", flush=True)
        env = child_environment({"RELAYLINE_PUBLIC_URL": f"http://{host}:{port}"}, overrides)
        Store(settings.database_url).dispose()
        pool, concurrency = settings.worker_pool, settings.worker_concurrency
        worker_env_ = worker_env(pool, concurrency, env)
        children.append(local_stack.start_child(worker_command(pool, concurrency), worker_env_))
        children.append(local_stack.start_child(web_command(host, port), web_env(env)))
        if not local_stack.wait_healthy(f"{local_stack.probe_url(host, port)}/healthz", children):
            print("relayline: the web or the worker did not start (see above).", file=sys.stderr)
            return 1
        print(f"relayline is up: http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        print("relayline: the web or the worker exited; stopping.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping relayline (web and worker, then Redis)...", flush=True)
        return 0
    except local_stack.Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        local_stack.stop_all(children)
        if embedded is not None:
            embedded.stop()


def _print_segment(events: Iterable[object]) -> None:
    for item in events:
        if isinstance(item, TextChunk):
            print(item.content, end="", flush=True)
        elif isinstance(item, ToolResultChunk):
            print(f"\n  [tool {item.tool.name} -> {item.tool.result}]", flush=True)
        elif isinstance(item, InterruptEvent):
            print(f"\n  [suspended: {item.request.message}]", flush=True)
    print()


def run_demo(database: str | None) -> int:
    """A scripted conversation in the terminal; each continuation uses a fresh Agent, as
    another process would."""
    spec: AgentSpec = build()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(database or f"sqlite:///{Path(tmp) / 'demo.db'}")
        thread = f"demo-{uuid.uuid4().hex[:8]}"
        for text in ("Hello there", "What is the weather?", "Delete report.pdf", "Page title?"):
            print(f"> {text}")
            _print_segment(Agent(thread, spec, store).stream(text))
            state = Agent(thread, spec, store).state()
            while state is not None and state.status == "suspended":
                agent = Agent(thread, spec, store)
                request = state.interrupt
                if isinstance(request, ApprovalRequest):
                    print("  (approving every action)")
                    staged = agent.submit_approval_decisions(
                        {a.id: "approve" for a in request.actions}
                    )
                else:
                    assert request is not None
                    print("  (the 'browser' answers the frontend tool)")
                    staged = agent.submit_tool_results(
                        {c.id: {"result": "relayline demo"} for c in request.tool_calls}
                    )
                _print_segment(staged.events())
                state = agent.state()
        store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
