"""Liveness and readiness. ``/readyz`` also shows the queue: turns sent to the broker
that no worker has started yet, and the admission limits (web.admission; 0: none), the
live workers (``workers``: those whose presence beat is fresh, channels.runs.workers;
none is no reason to be unready: a turn then waits, web.waiting), and the model
preflight (``model``: what would fail every turn, relayline.shared.preflight; a
warning, never a reason to be unready: a model server may come up later)."""

from __future__ import annotations

import contextlib

import sqlalchemy as sa
from flask import Blueprint, Response, jsonify

from relayline.channels.runs.backlog import depth
from relayline.channels.runs.workers import live
from relayline.shared.preflight import report
from relayline.web.services import services

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz() -> Response:
    svc = services()
    checks: dict[str, str] = {}
    try:
        with svc.store.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"error: {type(exc).__name__}"
    try:
        svc.redis.ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}"
    try:
        with svc.celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = f"error: {type(exc).__name__}"
    ready = all(value == "ok" for value in checks.values())
    queue: dict[str, int | None] = {
        "depth": None,
        "limit": svc.settings.max_queued_turns,
        "perOwnerLimit": svc.settings.max_queued_turns_per_owner,
    }
    workers: dict[str, int | list[str] | None] = {"count": None, "names": None}
    if checks["redis"] == "ok":
        # Readiness is the checks above; the depth is a figure that may be missing.
        with contextlib.suppress(Exception):
            queue["depth"] = depth(svc.redis, svc.settings.stream_max_age)
        with contextlib.suppress(Exception):
            names = live(svc.redis, svc.settings.heartbeat_ttl)
            workers = {"count": len(names), "names": names}
    body = {
        "status": "ready" if ready else "unavailable",
        "checks": checks,
        "queue": queue,
        "workers": workers,
        "model": report(svc.preflight.problems()),
    }
    response = jsonify(body)
    response.status_code = 200 if ready else 503
    return response
