"""relayline as a Flask extension: ``Relayline(app)``, or ``ext = Relayline()`` then
``ext.init_app(app, url_prefix="/ai", current_user=...)``.

``init_app`` mounts relayline's blueprints on the application under one parent
blueprint named ``relayline`` (so ``url_for("relayline.push.pusher_auth")``), keeps its
state (``relayline.web.services.Services``) in ``app.extensions["relayline"]`` and reads its
settings from ``app.config`` over the environment (``Settings.from_config``). Its error
handlers and its body limit belong to that blueprint, so the host's own routes keep
their error pages and limits. ``relayline web`` serves ``web.create_app()``, which is
this extension on an application of its own."""

from __future__ import annotations

from flask import Blueprint, Flask

from relayline.shared import telemetry
from relayline.shared.settings import Settings
from relayline.web import (
    agui,
    api_docs,
    connect,
    cors,
    cross_site,
    demo,
    errors,
    health,
    metrics,
    native,
    openapi,
    push,
    segments,
    stop,
    threads,
    vercel,
)
from relayline.web.auth import UserLoader
from relayline.web.body_limit import MAX_BODY_BYTES as MAX_BODY_BYTES  # re-exported
from relayline.web.body_limit import limit_body
from relayline.web.intake import IntakeSlots
from relayline.web.services import Services


def _prefix(url_prefix: str | None) -> str:
    """``"/ai"`` for ``"ai"``, ``"/ai/"`` or ``"/ai"``; ``""`` for the root."""
    cleaned = (url_prefix or "").strip("/")
    return f"/{cleaned}" if cleaned else ""


class Relayline:
    """relayline's endpoints on a host application (Flask's extension pattern)."""

    def __init__(
        self,
        app: Flask | None = None,
        *,
        url_prefix: str | None = None,
        current_user: UserLoader | None = None,
        settings: Settings | None = None,
    ) -> None:
        if app is not None:
            self.init_app(app, url_prefix=url_prefix, current_user=current_user, settings=settings)

    def init_app(
        self,
        app: Flask,
        *,
        url_prefix: str | None = None,
        current_user: UserLoader | None = None,
        settings: Settings | None = None,
    ) -> Services:
        """Mount relayline on ``app`` at ``url_prefix`` (default: ``RELAYLINE_URL_PREFIX``
        of ``app.config``, else the root). ``current_user()`` returns the owner id of the
        request, or None (401); without it RELAYLINE_AUTH decides."""
        if "relayline" in app.extensions:
            raise RuntimeError("relayline is already initialised on this application.")
        prefix = _prefix(
            url_prefix if url_prefix is not None else app.config.get("RELAYLINE_URL_PREFIX")
        )
        svc = Services.build(settings or Settings.from_config(app.config))
        svc.user_loader = current_user
        svc.url_prefix = prefix
        svc.init_app(app)
        app.register_blueprint(_mount(svc), url_prefix=prefix or None)
        if telemetry.configure(svc.settings, "relayline-web"):
            _trace_requests(app)
            telemetry.instrument(*telemetry.DEFAULT_PARTS)  # the publish carries context
        return svc

    @staticmethod
    def services(app: Flask) -> Services:
        """The state ``init_app`` left on ``app``."""
        found: Services = app.extensions["relayline"]
        return found


def _trace_requests(app: Flask) -> None:
    try:
        from opentelemetry.instrumentation.flask import FlaskInstrumentor
    except ImportError:
        return  # configure() already warned that the extra is missing
    FlaskInstrumentor().instrument_app(app)  # type: ignore[no-untyped-call]


def _mount(svc: Services) -> Blueprint:
    """A fresh parent blueprint holding relayline's own (one per application)."""
    parent = Blueprint("relayline", __name__)
    parent.before_request(limit_body)
    # CORS on this blueprint only: the host's own routes keep whatever the host decides.
    cors.init_app(parent, svc.settings.cors_origins, credentials=svc.user_loader is not None)
    parent.before_request(cross_site.guard)  # before intake: a refusal waits for no slot
    IntakeSlots(svc.settings.web_intake_slots).init_app(parent)
    errors.init_app(parent)
    blueprints = (
        health,
        metrics,
        agui,
        connect,
        vercel,
        native,
        segments,
        stop,
        threads,
        push,
        demo,
        openapi,
    )
    for module in blueprints:
        parent.register_blueprint(module.bp)
    parent.register_blueprint(api_docs.blueprint(svc.url_prefix), url_prefix=api_docs.DOCS_PATH)
    return parent
