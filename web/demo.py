"""The demo page at ``/``: a plain HTML + JS chat that speaks the native protocol.

The page and its assets live in ``web/static``; this blueprint serves them under
``/demo/static/`` so the page does not depend on how the app configures its own
static folder. Nothing here talks to the agent: the page calls the native endpoints.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, send_from_directory

STATIC = Path(__file__).resolve().with_name("static")

bp = Blueprint("demo", __name__, static_folder=str(STATIC), static_url_path="/demo/static")

#: the page loads only its own files and talks only to this origin; model output is
#: inserted as text, and this policy is the second line of defence if that ever slips
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@bp.get("/")
def page() -> Response:
    response = send_from_directory(STATIC, "demo.html", max_age=0)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
