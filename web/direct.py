"""A relayed response's frames written by the log reader, straight to gunicorn's gevent
socket, instead of waking the response's greenlet for every read.

Per relayed event, waking the response and passing its frame down the WSGI chain (the
response's generators, werkzeug's iterators, gunicorn's write, gevent's ``sendall``,
which asks the kernel for the send buffer size on every call) cost the web more CPU
than the socket write itself (bench/relay.py part 3). Once a response has sent its
headers, the reader (channels.multiplex) hands each read to a ``DirectSink``, which
frames it as gunicorn would (an HTTP/1.1 chunk) and writes it with one non-blocking
``write(2)``.

Only under gunicorn's gevent worker with the standard library patched: the reader and
every response are then greenlets of one OS thread, and a write (which never yields)
cannot interleave with one of the response's. A write the kernel takes only in part
leaves the rest to the response, which sends it as any write of its own, and takes the
reads again until it hands the socket back; a write that fails means the client went
away. RELAYLINE_RELAY_DIRECT=0 keeps every frame on the WSGI chain, for a middleware
that must see (or buffers) the body.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relayline.channels import TERMINALS
from relayline.channels.envelope import REPLACED
from relayline.channels.stream.splice import Spliced
from relayline.shared import green, metrics
from relayline.shared.settings import Settings

# Bound once: a label lookup per write would cost what this module saves.
_WHOLE = metrics.RELAY_DIRECT_WRITES.labels("whole")
_PARTIAL = metrics.RELAY_DIRECT_WRITES.labels("partial")
_GONE = metrics.RELAY_DIRECT_WRITES.labels("gone")


class ClientGone(Exception):
    """The client of a directly written response went away (its socket failed)."""


#: channel frames no client gets as an event: terminals, and a takeover's notice (the
#: relay answers it with the protocol's "continues elsewhere" error frame)
_UNSENT = TERMINALS | {REPLACED}


def frames_of(batch: Sequence[Spliced], ids: str | None) -> list[str]:
    """The SSE frames of a batch's events, terminals and notices left out; ``ids``, the
    segment's id, puts ``id: <segment>:<sequence>`` before each (the native cursor,
    web.cursor)."""
    if ids is not None:
        return [f"id: {ids}:{s.sequence}\n{s.frame}" for s in batch if s.type not in _UNSENT]
    return [s.frame for s in batch if s.type not in _UNSENT]


class DirectSink:
    """The socket of one relayed response, written by the log reader (the
    ``relayline.channels.stream.reader.Sink`` of a subscription)."""

    def __init__(
        self,
        sock: Any,
        *,
        chunked: bool,
        ids: str | None,
        on_frames: Callable[[int], None] | None = None,
    ) -> None:
        self._sock = sock  # gevent's socket: the response's own (blocking) writes
        self._fd: int = sock.fileno()
        self._chunked = chunked
        self._ids = ids
        self._on_frames = on_frames
        self._rest = b""  # what the kernel did not take of the reader's last write
        self._failed: OSError | None = None

    def write(self, batch: Sequence[Spliced]) -> bool:
        """(the reader) Write a batch's frames; False when it could not all be written
        (the response sends the rest, ``flush``) or the client is gone."""
        frames = frames_of(batch, self._ids)
        if not frames:
            return True
        if self._on_frames is not None:
            self._on_frames(len(frames))
        body = "".join(frames).encode()
        data = b"%X\r\n%s\r\n" % (len(body), body) if self._chunked else body
        try:
            sent = os.write(self._fd, data)  # the fd is non-blocking: gevent made it so
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self._failed = exc
            _GONE.inc()
            return False
        if sent < len(data):
            self._rest = data[sent:]
            _PARTIAL.inc()
            return False
        _WHOLE.inc()
        return True

    def flush(self) -> None:
        """(the response) Send what the reader's write left; raises ClientGone when the
        client went away."""
        if self._failed is not None:
            raise ClientGone(str(self._failed)) from self._failed
        if self._rest:
            rest, self._rest = self._rest, b""
            try:
                self._sock.sendall(rest)
            except OSError as exc:
                self._failed = exc
                raise ClientGone(str(exc)) from exc


class DirectSocket:
    """The socket of a response the log reader may write (``direct_socket``), and how
    gunicorn frames its body."""

    def __init__(self, sock: Any, *, chunked: bool) -> None:
        self.sock = sock
        self.chunked = chunked

    def sink(
        self, *, ids: str | None, on_frames: Callable[[int], None] | None = None
    ) -> DirectSink:
        return DirectSink(self.sock, chunked=self.chunked, ids=ids, on_frames=on_frames)


def direct_socket(environ: Mapping[str, Any], settings: Settings) -> DirectSocket | None:
    """The socket of the response to the request ``environ`` when the server is
    gunicorn's gevent worker and the settings allow direct writes; else None (every
    frame goes through the WSGI chain)."""
    sock = environ.get("gunicorn.socket")
    if not settings.relay_direct or sock is None or not green.patched():
        return None
    if not type(sock).__module__.startswith("gevent"):
        return None
    if environ.get("REQUEST_METHOD") == "HEAD":
        return None  # gunicorn sends no body at all
    # gunicorn frames a body of unknown length as chunks for HTTP/1.1 and later
    # (gunicorn.http.wsgi.Response.is_chunked); an HTTP/1.0 body is written as it is.
    chunked = environ.get("SERVER_PROTOCOL", "HTTP/1.0") not in ("HTTP/1.0", "HTTP/0.9")
    return DirectSocket(sock, chunked=chunked)
