"""A local model server replaying providers' documented streaming wire formats.

``ModelWire`` listens on 127.0.0.1 and answers ``POST .../chat/completions`` with OpenAI
chat completion chunks (server-sent events, ``data: {...}`` lines ending in
``data: [DONE]``) and ``POST .../messages`` with Anthropic's message stream
(``event: message_start`` ... ``event: message_stop``), one SSE event per HTTP chunk,
so that pydantic-ai's real SDK clients parse them. Replies are queued per test; each
may be cut short (the socket closed without the terminating chunk) or stall after some
events until released. Usable from a test process and, started by itself with
``python -m tests.support.model_wire``, from a worker's environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "sk-wire-test-0123456789abcdef"


@dataclasses.dataclass
class Reply:
    """One streamed answer: its SSE events, and how it misbehaves."""

    events: list[str]
    #: close the connection after the events without the terminating chunk
    cut: bool = False
    #: stop after this many events until ``release`` (or the stall limit)
    stall_after: int | None = None
    #: send nothing at all (not even the headers) until ``release``
    stall_before_headers: bool = False
    status: int = 200
    #: a non-streamed body (with ``status``), instead of events
    body: str | None = None


@dataclasses.dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: ModelWire

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        reply = self.server.take(received)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(reply)
        self.close_connection = True

    def _send(self, reply: Reply) -> None:
        if reply.stall_before_headers:
            self.server.stall(self.connection)
            return
        if reply.body is not None:
            data = reply.body.encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for index, event in enumerate(reply.events):
            if index == reply.stall_after:
                self.wfile.flush()
                self.server.stall(self.connection)
                return
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if not reply.cut:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ModelWire(ThreadingHTTPServer):
    """The server; ``replies`` are answered in order (the last one repeats)."""

    daemon_threads = True

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.received: list[Received] = []
        self.replies: list[Reply] = []
        self.release = threading.Event()
        #: set when a stalled reply is reached, and when its client closed the connection
        self.stalling = threading.Event()
        self.client_closed = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def answer_with(self, *replies: Reply) -> None:
        """Replace the queue: the next calls get ``replies`` (a test of a module-wide server)."""
        with self._lock:
            self.replies[:] = replies

    def take(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            if not self.replies:
                return Reply([], status=500, body='{"error": {"message": "no reply queued"}}')
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def stall(self, connection: socket.socket) -> None:
        """Send nothing until released (20 s at most), watching for the client to close."""
        self.stalling.set()
        deadline = time.monotonic() + 20
        while not self.release.wait(0.01) and time.monotonic() < deadline:
            readable, _, _ = select.select([connection], [], [], 0)
            if readable:
                try:
                    gone = connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    self.client_closed.set()
                    return

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    def start(self) -> ModelWire:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


# OpenAI chat completions ---------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    chunk = {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(chunk)}\n\n"


def openai_stream(
    text: Sequence[str] = (),
    *,
    reasoning: Sequence[str] = (),
    tool_calls: Sequence[tuple[str, str, Sequence[str]]] = (),
    usage: tuple[int, int] | None = (11, 7),
    finish: str | None = None,
    done: bool = True,
) -> list[str]:
    """The events of one chat completion: reasoning (``reasoning_content``) and text in
    the given fragments, then each tool call ``(id, name, argument fragments)`` over
    many deltas, the finish reason, the usage chunk and ``[DONE]``."""
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"reasoning_content": piece}) for piece in reasoning]
    events += [_chunk({"content": piece}) for piece in text]
    for index, (call_id, name, fragments) in enumerate(tool_calls):
        events.append(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        events += [
            _chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in fragments
        ]
    events.append(_chunk({}, finish or ("tool_calls" if tool_calls else "stop")))
    if usage is not None:
        prompt, completion = usage
        usage_json = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        events.append(
            "data: "
            + json.dumps(
                {
                    "id": "chatcmpl-wire",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "gpt-4o-mini",
                    "choices": [],
                    "usage": usage_json,
                }
            )
            + "\n\n"
        )
    if done:
        events.append("data: [DONE]\n\n")
    return events


def openai_text(count: int, piece: str = "tok ") -> list[str]:
    """A long text answer: ``count`` content chunks."""
    return openai_stream([piece] * count)


# Anthropic messages --------------------------------------------------------------------


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"


def anthropic_stream(
    text: Sequence[str] = (),
    *,
    thinking: Sequence[str] = (),
    signature: str = "sig-wire-1",
    tool_uses: Sequence[tuple[str, str, Sequence[str]]] = (),
    usage: tuple[int, int] = (21, 9),
    stop: bool = True,
) -> list[str]:
    """The events of one Messages API stream: a thinking block (with its signature), a
    text block, then each tool use ``(id, name, partial_json fragments)``."""
    prompt, completion = usage
    events = [
        _event(
            "message_start",
            {
                "message": {
                    "id": "msg_wire",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": prompt, "output_tokens": 1},
                }
            },
        )
    ]
    index = 0
    if thinking:
        events.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "thinking", "thinking": ""}},
            )
        )
        events += [
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
            )
            for piece in thinking
        ]
        events.append(
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "signature_delta", "signature": signature}},
            )
        )
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    if text:
        events.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        events += [
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
            for piece in text
        ]
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    for call_id, name, fragments in tool_uses:
        events.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        events += [
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
            for piece in fragments
        ]
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    if stop:
        events.append(
            _event(
                "message_delta",
                {
                    "delta": {
                        "stop_reason": "tool_use" if tool_uses else "end_turn",
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": completion},
                },
            )
        )
        events.append(_event("message_stop", {}))
    return events


def split(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (a tool call's arguments over many deltas)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def serve_forever(port: int, replies: Iterable[Reply]) -> None:
    wire = ModelWire(port)
    wire.queue(*replies)
    wire.start()
    try:
        while True:
            time.sleep(3600)
    finally:
        wire.stop()


if __name__ == "__main__":  # pragma: no cover - a helper for manual runs
    serve_forever(int(sys.argv[1]) if len(sys.argv) > 1 else 0, [Reply(openai_stream(["Hi"]))])
