"""A Mercure hub for tests: ``RELAYLINE_TEST_MERCURE_HUB_URL`` (with
``RELAYLINE_TEST_MERCURE_PUBLISHER_KEY`` and ``..._SUBSCRIBER_KEY``) when given, else the
standalone hub of pip ``flask-mercure-sse`` this session starts on 127.0.0.1 with
publisher and subscriber JWT keys and no anonymous subscribers, stopped by its PID.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.soketi import free_port, stop, wait_ready


@dataclasses.dataclass(frozen=True)
class MercureHub:
    url: str  # the hub endpoint, ``.../.well-known/mercure``
    publisher_key: str
    subscriber_key: str


@contextmanager
def mercure_hub() -> Iterator[MercureHub]:
    configured = os.environ.get("RELAYLINE_TEST_MERCURE_HUB_URL")
    if configured:
        yield MercureHub(
            configured,
            os.environ["RELAYLINE_TEST_MERCURE_PUBLISHER_KEY"],
            os.environ["RELAYLINE_TEST_MERCURE_SUBSCRIBER_KEY"],
        )
        return
    port = free_port()
    hub = MercureHub(
        f"http://127.0.0.1:{port}/.well-known/mercure",
        secrets.token_urlsafe(32),
        secrets.token_urlsafe(32),
    )
    # The hub copies every MERCURE_* variable into its config and loads a .env file:
    # give it neither, so only the command line below configures it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MERCURE_")}
    env["PYTHON_DOTENV_DISABLED"] = "1"
    command = [
        sys.executable,
        "-m",
        "flask_mercure_sse.server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--publisher-secret",
        hub.publisher_key,
        "--subscriber-secret",
        hub.subscriber_key,
        "--no-allow-anonymous",
    ]
    with tempfile.TemporaryDirectory(prefix="mercure-") as folder:
        log = Path(folder) / "hub.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                command,
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            # An anonymous subscription is refused at once: the hub is up and private.
            wait_ready(process, hub.url, lambda r: r.status_code == 401, log)
            yield hub
        finally:
            stop(process)


@dataclasses.dataclass(frozen=True)
class Recorded:
    """One request a StandInServer received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def form(self) -> list[tuple[str, str]]:
        """The body as form fields, in order (strict: a malformed body fails)."""
        text = self.body.decode("ascii")
        return urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=True)


class StandInServer:
    """A local HTTP server thread standing in for a Mercure hub or the Pusher HTTP API
    in unit tests: records every request and answers from ``replies`` (status,
    headers, body) in order, then 200 with ``{}``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: list[tuple[int, dict[str, str], bytes]] = []
        self.received = threading.Event()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                url = urllib.parse.urlsplit(self.path)
                stand_in.requests.append(
                    Recorded(
                        self.command,
                        url.path,
                        dict(urllib.parse.parse_qsl(url.query)),
                        {k.lower(): v for k, v in self.headers.items()},
                        self.rfile.read(length),
                    )
                )
                status, headers, body = (
                    stand_in.replies.pop(0) if stand_in.replies else (200, {}, b"{}")
                )
                self.send_response(status)
                for name, value in (headers | {"Content-Length": str(len(body))}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
                stand_in.received.set()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/.well-known/mercure"

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
