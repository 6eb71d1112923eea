"""The web process: thin Flask endpoints that validate, enqueue and relay.

``create_app`` is the standalone application (``relayline web``); an existing Flask
application mounts the same endpoints with ``relayline.Relayline`` (web.extension)."""

from __future__ import annotations

from typing import Any

from flask import Flask

from relayline.shared.settings import Settings
from relayline.web import errors
from relayline.web.extension import MAX_BODY_BYTES, Relayline

__all__ = ["MAX_BODY_BYTES", "Relayline", "create_app"]


def create_app(
    settings: Settings | None = None, test_config: dict[str, Any] | None = None
) -> Flask:
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    if test_config:
        app.config.update(test_config)
    # A server of its own answers every error as JSON, unknown routes included.
    errors.init_app(app)
    Relayline(app, settings=settings or Settings.from_config(app.config))
    return app
