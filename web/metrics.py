"""``GET /metrics``: Prometheus' text format, when ``RELAYLINE_METRICS=1`` (404 otherwise).
Under gunicorn with ``PROMETHEUS_MULTIPROC_DIR`` set, the samples of every worker
process are aggregated (prometheus_client's multiprocess collector)."""

from __future__ import annotations

import os

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from werkzeug.exceptions import NotFound

from web.services import services

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    if not services().settings.metrics:
        raise NotFound("Metrics are off; set RELAYLINE_METRICS=1.")
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # noqa: TID251 - prometheus_client's own
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
