"""Web origins (``scheme://host[:port]``, RFC 6454) as browsers send them in ``Origin``:
what RELAYLINE_CORS_ORIGINS lists: the origins that get CORS answers (web.cors) and
that a cookie-authenticated request's ``Origin`` may be (web.cross_site)."""

from __future__ import annotations

import urllib.parse

#: ports a browser leaves out of an origin
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """The origin of ``url`` in the form a browser sends it (lower case, no default
    port, no path), or None when ``url`` has no http(s) origin (``null`` included)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname  # lower case already; IPv6 without its brackets
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{port}"
    return f"{scheme}://{host}"


def parse_origins(value: str, name: str = "RELAYLINE_CORS_ORIGINS") -> tuple[str, ...]:
    """A comma-separated list of origins, normalized; ValueError naming the first entry
    that is not exactly an origin (a path, a query or a wildcard would suggest a rule
    this check does not apply)."""
    found: list[str] = []
    for entry in filter(None, (part.strip() for part in value.split(","))):
        origin = origin_of(entry)
        extra = urllib.parse.urlsplit(entry.rstrip("/"))[2:]  # path, query, fragment
        if origin is None or any(extra) or "*" in entry or "@" in entry:
            raise ValueError(
                f"{name} lists origins as scheme://host[:port], separated by commas; got {entry!r}."
            )
        if origin not in found:
            found.append(origin)
    return tuple(found)
