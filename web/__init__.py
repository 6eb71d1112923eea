"""The web process: thin Flask endpoints that validate, enqueue and relay."""

from __future__ import annotations

from typing import Any

from flask import Flask

from shared.settings import Settings
from web import agui, demo, errors, health, native, push, stop, threads, vercel
from web.services import Services

#: request bodies above this many bytes are refused with 413
MAX_BODY_BYTES = 1024 * 1024


def create_app(
    settings: Settings | None = None, test_config: dict[str, Any] | None = None
) -> Flask:
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    if test_config:
        app.config.update(test_config)
    Services.build(settings or Settings.from_env()).init_app(app)
    errors.init_app(app)
    for blueprint in (
        health.bp,
        agui.bp,
        vercel.bp,
        native.bp,
        stop.bp,
        threads.bp,
        push.bp,
        demo.bp,
    ):
        app.register_blueprint(blueprint)
    return app
