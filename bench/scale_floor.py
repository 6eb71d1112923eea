"""The floor under bench/scale.py's first byte: the same hop with none of relayline.

A Flask view on the same gunicorn gevent command sends a Celery task, waits for the
task to add one event to a Redis stream and answers it as its first SSE event; the
task, on a worker of the same pool, concurrency, broker transport (relayline's
batched intake, without which kombu takes about 70 turns a second under gevent) and
acknowledgement settings, does nothing but that XADD. No authentication, no database,
no admission, no agent, no log reader: what 500 turns posted at once cost the HTTP
server, Celery and Redis alone on this machine.

    gunicorn bench.scale_floor:app ...
    celery -A bench.scale_floor:celery worker --pool gevent ...
"""

from __future__ import annotations

from typing import cast

import redis
from celery import Celery
from flask import Flask, Response

from relayline.shared.settings import Settings

_settings = Settings.from_env()
_url = _settings.redis_url or "redis://127.0.0.1:6379/0"
#: the event the task writes; bench/scale.py counts a turn ok when it holds "[end]"
EVENT = b'{"type":"text","text":"[end]"}'
#: milliseconds a view waits for its task's event
PATIENCE_MS = 60_000

celery = Celery("relayline-floor", broker=_url)
celery.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    broker_transport="relayline.worker.intake:Transport",
    broker_heartbeat=0,
    broker_transport_options={"max_connections": _settings.worker_concurrency + 8},
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_default_queue="relayline-floor",  # never a relayline worker's tasks
)
_client = redis.Redis.from_url(_url)


@celery.task(name="floor.first")
def first(key: str) -> None:
    _client.xadd(key, {"e": EVENT})


app = Flask(__name__)


@app.get("/healthz")
def healthz() -> Response:
    return Response("ok")


@app.post("/api/threads/<thread_id>/messages")
def post(thread_id: str) -> Response:
    key = f"relayline:floor:{thread_id}"
    celery.send_task("floor.first", args=[key], ignore_result=True)
    reply = cast(list[list[object]], _client.xread({key: "0-0"}, block=PATIENCE_MS))
    _client.delete(key)
    if not reply:
        return Response("no event", status=504)
    rows = cast(list[tuple[bytes, dict[bytes, bytes]]], reply[0][1])
    return Response(b"data: %s\n\n" % rows[0][1][b"e"], mimetype="text/event-stream")
