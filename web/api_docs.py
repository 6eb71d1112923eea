"""``GET /docs``: an interactive viewer of ``/openapi.json`` (Swagger UI).

The viewer is the maintained ``flask-swagger-ui`` package, whose wheel carries Swagger
UI's built files; they are served from here, so the page loads nothing from another
site (no CDN) and works offline. The page asks its files and the document at absolute
paths, so both carry the mount prefix of an embedding application."""

from __future__ import annotations

from flask import Blueprint
from flask_swagger_ui import get_swaggerui_blueprint

#: where the viewer is mounted, under relayline's prefix
DOCS_PATH = "/docs"


def blueprint(prefix: str) -> Blueprint:
    """The viewer for relayline mounted at ``prefix`` ("" at the root)."""
    viewer: Blueprint = get_swaggerui_blueprint(
        f"{prefix}{DOCS_PATH}",
        f"{prefix}/openapi.json",
        config={"app_name": "relayline API"},
        blueprint_name="api_docs",
    )
    return viewer
