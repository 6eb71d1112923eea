"""What a provider's ``preflight()`` reports: a problem that will fail every turn (no SDK,
no key, nothing listening at the base URL), found before the first one.

A check never calls the model (no tokens, no key sent anywhere): it looks at the
configuration and opens a TCP connection to the base URL's host and port.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
from typing import Final
from urllib.parse import urlsplit

from relayline.shared.errors import FailureCode

#: seconds a preflight waits for a TCP connection to a base URL
CONNECT_TIMEOUT: Final = 2.0
_PORTS: Final = {"http": 80, "https": 443}


@dataclasses.dataclass(frozen=True)
class ModelProblem:
    """One problem of a provider's configuration: the failure code every turn would end
    with, and one line saying what to set."""

    code: FailureCode
    message: str


def unreachable(url: str, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """Why nothing answers at ``url``'s host and port (``connection refused``, ...), or
    None when a TCP connection opens."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return "the URL names no host"
    try:
        port = parts.port or _PORTS.get(parts.scheme, 80)
    except ValueError:
        return "the URL's port is not a number"
    try:
        connection = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror:
        return f"the host name {host!r} does not resolve"
    except ConnectionRefusedError:
        return f"connection refused at {host}:{port}"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout:g} s"
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
    with contextlib.suppress(OSError):
        connection.close()
    return None


def connection_cause(text: str) -> str:
    """A short cause of a failed connection from an HTTP client's error text."""
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if any(
        sign in lowered
        for sign in ("name or service not known", "nodename nor servname", "failed to resolve")
    ):
        return "its host name does not resolve"
    if "timed out" in lowered or "timeout" in lowered:
        return "the connection timed out"
    return "no connection"
