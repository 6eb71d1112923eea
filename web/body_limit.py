"""The request body limit (1 MiB), for bodies of announced length and chunked ones alike.

Werkzeug refuses a ``Content-Length`` over the limit with 413 before reading. A chunked
body announces no length: Werkzeug then reads at most the limit and stops there without
a word, so a larger body arrived cut short and was refused as "not a JSON object". Here
a chunked body is read up front (cached, so the routes and the form parser read the same
bytes) and refused with 413 when anything is left past the limit.
"""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

#: request bodies above this many bytes are refused with 413
MAX_BODY_BYTES = 1024 * 1024

#: the 413's message, for announced and chunked bodies alike (web.errors)
BODY_TOO_LARGE = f"The request body is larger than {MAX_BODY_BYTES} bytes (1 MiB)."


def limit_body() -> None:
    """Before every relayline request: the limit, per request (Flask 3.1), so a host's
    own routes keep theirs; a chunked body past it is a 413 here."""
    request.max_content_length = MAX_BODY_BYTES
    if "chunked" not in request.headers.get("Transfer-Encoding", "").lower():
        return
    body = request.get_data(cache=True)  # at most MAX_BODY_BYTES: werkzeug stops there
    # Only a body that filled the limit may have more; the server's own stream (not
    # werkzeug's capped wrapper) says whether it has.
    if len(body) >= MAX_BODY_BYTES and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge(BODY_TOO_LARGE)
