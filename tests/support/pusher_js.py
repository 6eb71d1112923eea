"""pusher-js (the official client, in Node) as a subprocess: it subscribes to one
channel through an auth endpoint and reports JSON lines (tests/node/pusher-client)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.support.soketi import Soketi, ensure_node_modules

CLIENT = Path(__file__).resolve().parents[1] / "node" / "pusher-client"


class PusherJs:
    """Subscribed once constructed (the ``ready`` line arrived), else it raises.
    ``next_line`` fails on an error or exit line; ``log`` lines (decryption messages
    from pusher-js) are collected in ``logs`` as they pass."""

    def __init__(self, soketi: Soketi, channel: str, auth_endpoint: str, timeout: float) -> None:
        ensure_node_modules(CLIENT)
        self.logs: list[str] = []
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        options = {
            "key": soketi.key,
            "host": soketi.host,
            "port": soketi.port,
            "channel": channel,
            "authEndpoint": auth_endpoint,
        }
        self.process = subprocess.Popen(
            ["node", str(CLIENT / "subscribe.mjs"), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            line = self.next_line(timeout)
            assert line["kind"] == "ready", f"pusher-js could not subscribe: {line}"
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self._lines.put(json.loads(raw))
        self._lines.put({"kind": "exit"})

    def next_line(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"pusher-js said nothing within {timeout:.0f}s") from None
        if line["kind"] in ("error", "exit"):
            raise AssertionError(f"the pusher-js subscriber failed: {line}")
        if line["kind"] == "log":
            self.logs.append(line["message"])
        return line

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # subscribe.mjs disconnects and exits
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self._reader.join(5)
        assert self.process.stdout is not None
        self.process.stdout.close()
