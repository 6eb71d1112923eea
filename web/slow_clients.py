"""Backpressure by bytes: what a relayed response's client may leave unread.

Each relayed response has a budget (RELAYLINE_CLIENT_BUFFER_BYTES, counted in
characters of the events' JSON text). The log reader counts what waits unsent for the
client (queued for it, plus what its response took and has not written yet); past the
budget it drops the client (channels.stream.reader): the client's socket is shut down
here, so a response blocked writing to a client that never reads ends at once and frees
what it held. The log is durable: the client resumes from the last event it received
(``Last-Event-ID``, or the protocol's resume route)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping
from typing import Any

from relayline.shared import metrics
from relayline.shared.settings import Settings

#: where a WSGI server puts the request's socket (gunicorn, werkzeug's server)
_SOCKET_KEYS = ("gunicorn.socket", "werkzeug.socket")


class ClientBudget:
    """The budget of one response (``chars``) and its client's socket, if the server
    shows it (without, a dropped response ends once its blocked write returns)."""

    def __init__(self, chars: int, sock: socket.socket | None) -> None:
        self.chars = chars
        self._sock = sock
        #: the client was dropped for passing the budget (not gone by its own choice)
        self.dropped = False

    @property
    def can_drop(self) -> bool:
        return self._sock is not None

    def drop(self) -> None:
        """(the log reader) Cut the client's connection. Both ways: a write blocked on
        the full socket fails now (EPIPE); what the kernel already holds still reaches
        the client before the end of the stream."""
        self.dropped = True
        metrics.SLOW_CLIENTS_DROPPED.inc()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_WR)


def client_budget(environ: Mapping[str, Any], settings: Settings) -> ClientBudget:
    sock = next((environ[k] for k in _SOCKET_KEYS if environ.get(k) is not None), None)
    return ClientBudget(settings.client_buffer_bytes, sock)
