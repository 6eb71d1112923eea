"""The demo page at ``/``: a plain HTML + JS chat that speaks the native protocol.

The page and its assets live in ``web/static``; this blueprint serves them under
``/demo/static/`` so the page does not depend on how the app configures its own
static folder. Nothing here talks to the agent: the page calls the native endpoints.
``GET /demo/config`` tells the page which push deliveries this server offers and how a
browser reaches them, and the thread id rule (so the page does not restate it); the
page's Content-Security-Policy allows exactly those origins.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, send_from_directory

from relayline.shared.ids import THREAD_ID_PATTERN
from relayline.shared.settings import Settings
from relayline.shared.texts import OUTCOME_TEXTS
from relayline.web.services import services

STATIC = Path(__file__).resolve().with_name("static")

bp = Blueprint("demo", __name__, static_folder=str(STATIC), static_url_path="/demo/static")

#: the page loads only its own files and talks only to this origin and the push services
#: this server is configured for; model output is inserted as text, and this policy is
#: the second line of defence if that ever slips
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src {connect}; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: pusher-js's host for the cluster the Pusher SDK defaults to (no PUSHER_HOST)
PUSHER_CLOUD_WS_HOST = "ws-mt1.pusher.com"


def push_config(settings: Settings) -> dict[str, Any]:
    """What a browser needs to subscribe to each configured push delivery."""
    offered: dict[str, Any] = {}
    pusher, mercure = settings.pusher, settings.mercure
    if pusher.configured:
        tls = pusher.port in (None, 443)  # the rule of channels.pusher_client
        port = pusher.port or 443
        offered["pusher"] = {
            "key": pusher.key,
            "wsHost": pusher.host or PUSHER_CLOUD_WS_HOST,
            "wsPort": port,
            "wssPort": port,
            "forceTLS": tls,
            "encrypted": pusher.encrypted,
        }
    if mercure.configured:
        offered["mercure"] = {"hubUrl": mercure.hub_url}
    return offered


def content_security_policy(settings: Settings) -> str:
    connect = ["'self'"]
    offered = push_config(settings)
    if "pusher" in offered:
        pusher = offered["pusher"]
        scheme = "wss" if pusher["forceTLS"] else "ws"
        connect.append(f"{scheme}://{pusher['wsHost']}:{pusher['wsPort']}")
    if "mercure" in offered:
        hub = urllib.parse.urlsplit(offered["mercure"]["hubUrl"])
        connect.append(f"{hub.scheme}://{hub.netloc}")
    return CONTENT_SECURITY_POLICY.format(connect=" ".join(connect))


@bp.get("/")
def page() -> Response:
    response = send_from_directory(STATIC, "demo.html", max_age=0)
    response.headers["Content-Security-Policy"] = content_security_policy(services().settings)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/demo/config")
def config() -> Response:
    """``{"delivery": <the default>, "threadIdPattern": <regex source>, "tokenRequired",
    "outcomeTexts", "pusher"?: {...}, "mercure"?: {"hubUrl"}}``; a thread id matches the
    whole pattern. ``tokenRequired``: the API wants a bearer token (RELAYLINE_AUTH token
    or jwt, and no host sign-in), so the page asks the person for one. ``outcomeTexts``
    are the person's words for decided and unfinished calls (shared/texts.py)."""
    svc = services()
    settings = svc.settings
    config = {
        "delivery": settings.delivery,
        "threadIdPattern": THREAD_ID_PATTERN,
        "tokenRequired": svc.user_loader is None and settings.auth != "none",
        "outcomeTexts": OUTCOME_TEXTS,
    }
    response = jsonify({**config, **push_config(settings)})
    response.headers["Cache-Control"] = "no-cache"
    return response
