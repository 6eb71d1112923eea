"""The web's Celery client on a Redis broker: kombu's Redis transport with one Redis
client per channel (shared.redis_channel). Only plain ``redis://`` brokers use it;
every other URL (``rediss://``, Sentinel, RabbitMQ) keeps its own transport.
"""

from __future__ import annotations

from celery import Celery
from kombu.transport import redis as kombu_redis

from relayline.process.redis_channel import ReusingChannel


class ReusingTransport(kombu_redis.Transport):
    Channel = ReusingChannel


def web_celery(broker_url: str | None) -> Celery:
    """The web's client for sending tasks by name (it never runs one)."""
    app = Celery("relayline-web", broker=broker_url)
    if broker_url is not None and broker_url.startswith("redis://"):
        app.conf.broker_transport = f"{__name__}:ReusingTransport"
    return app
