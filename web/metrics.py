"""``GET /metrics``: Prometheus' text format, when ``RELAYLINE_METRICS=1`` (404 otherwise).
Under gunicorn with ``PROMETHEUS_MULTIPROC_DIR`` set, the samples of every worker
process are aggregated (prometheus_client's multiprocess collector)."""

from __future__ import annotations

import logging
import os
from typing import cast

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from redis.exceptions import RedisError
from werkzeug.exceptions import NotFound

from relayline.channels.runs.backlog import depth
from relayline.shared import metrics as relayline_metrics
from relayline.web.services import Services, services

logger = logging.getLogger("relayline.web")

bp = Blueprint("metrics", __name__)


def _read_redis(svc: Services) -> None:
    """The figures Redis holds, read now: queued turns and its memory."""
    try:
        relayline_metrics.QUEUED_TURNS.set(depth(svc.redis, svc.settings.stream_max_age))
        memory = cast(dict[str, object], svc.redis.info("memory"))
        used = memory.get("used_memory")
        if isinstance(used, int):
            relayline_metrics.REDIS_MEMORY.set(used)
    except RedisError as exc:  # the scrape still answers with what the process knows
        logger.warning("metrics could not read Redis: %s", exc)


@bp.get("/metrics")
def metrics() -> Response:
    svc = services()
    if not svc.settings.metrics:
        raise NotFound("Metrics are off; set RELAYLINE_METRICS=1.")
    _read_redis(svc)
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # noqa: TID251 - prometheus_client's own
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
