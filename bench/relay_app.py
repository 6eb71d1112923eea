"""The production relay body on a route of its own, for bench/relay.py.

    GET /bench/relay/<channel name>   native SSE of what publishers send on that channel

The route does what ``web.dispatch.relay`` does minus the agent and the Celery task:
subscribe a ``RedisChannelReader`` first, then return ``web.dispatch._relayed`` (imported,
never copied) as the streaming body with the native protocol's headers. bench/relay.py
serves it with ``relayline.cli.web_command``'s gunicorn options (one gevent worker), so the
relay code, the server and its configuration are the ones in production.
"""

from __future__ import annotations

import redis
from flask import Flask, Response

from channels import RedisChannelReader
from shared.adapters import NativeAdapter
from shared.settings import Settings
from web.dispatch import SSE_HEADERS, _relayed

settings = Settings.from_env()
if not settings.redis_url:
    raise RuntimeError("Set REDIS_URL: the bench relay reads Redis Pub/Sub.")
# One client for the process, as web.services builds it: each reader takes its own
# Pub/Sub connection from this client's pool.
client = redis.Redis.from_url(settings.redis_url)
HEADERS = {**NativeAdapter().headers(), **SSE_HEADERS}

app = Flask(__name__)


@app.get("/bench/ping")
def ping() -> str:
    return "ok"


@app.get("/bench/relay/<name>")
def relay(name: str) -> Response:
    reader = RedisChannelReader(client, name, timeout=settings.relay_timeout)
    reader.subscribe()  # before answering, as production subscribes before enqueuing
    body = _relayed(reader, "native", "bench", {})
    return Response(body, headers=HEADERS)
