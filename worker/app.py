"""The Celery application. ``celery -A worker.app worker`` (or ``relayline worker``) runs it.

Timing is ordered as docs/reference/neuron-streaming-spec.md section 7.2 requires: the run
lease outlives the longest single step, the task time limit outlives the longest turn,
and the broker's visibility timeout outlives the task time limit, so no live run is
taken for dead and no two workers run the same turn.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import prometheus_client
from celery import Celery
from celery.signals import worker_init, worker_process_init, worker_ready

from relayline.process import collector, redis_version
from relayline.shared import green, telemetry
from relayline.shared.settings import Settings

if TYPE_CHECKING:
    from celery.worker import WorkController

#: seconds a worker holds a run between checkpoints (longest single step)
LEASE_SECONDS = 600
#: seconds one task may take (longest turn); the soft limit lets the run report failure
TASK_SOFT_TIME_LIMIT = 1500
TASK_TIME_LIMIT = 1800
#: seconds before the broker hands an unacknowledged task to another worker
VISIBILITY_TIMEOUT = 3600
#: broker connections beyond one per turn slot: the consumer's own, its heartbeat, timers
BROKER_SPARE_CONNECTIONS = 10

logger = logging.getLogger(__name__)

redis_version.read_once()  # before the broker's first connection

assert LEASE_SECONDS < TASK_SOFT_TIME_LIMIT < TASK_TIME_LIMIT < VISIBILITY_TIMEOUT


def make_celery(settings: Settings | None = None) -> Celery:
    settings = settings or Settings.from_env()
    broker = settings.broker_url
    if not broker:
        raise RuntimeError("Set REDIS_URL (or CELERY_BROKER_URL) for the worker's broker.")
    app = Celery("relayline", broker=broker, include=["relayline.worker.tasks"])
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # Many turns per process: a turn mostly waits on its model (RELAYLINE_WORKER_POOL,
        # RELAYLINE_WORKER_CONCURRENCY; docs/deployment.md gives the reason and the sizing rules).
        # relayline's choice is kept apart from Celery's worker_pool, which Celery warns
        # about for gevent on every start (that pool is named on the command line).
        relayline_pool=(pool := _runnable_pool(settings.worker_pool)),
        worker_concurrency=settings.worker_concurrency,
        task_soft_time_limit=TASK_SOFT_TIME_LIMIT,
        task_time_limit=TASK_TIME_LIMIT,
        broker_transport_options={
            "visibility_timeout": VISIBILITY_TIMEOUT,
            # Every turn acknowledges its task from its own thread (acks_late): the
            # transport's pool must hold one connection per slot, not kombu's 10.
            "max_connections": settings.worker_concurrency + BROKER_SPARE_CONNECTIONS,
        },
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        # Undecodable messages go to the dead-letter list as well (worker.guard).
        worker_consumer="relayline.worker.guard:GuardedConsumer",
    )
    if broker.split("://", 1)[0] in ("redis", "rediss"):
        # Turns waiting in the broker are taken in batches, not one per round trip.
        app.conf.broker_transport = "relayline.worker.intake:Transport"
    if pool != "gevent":
        # A configured pool overrides Celery's default (``--pool prefork``).
        app.conf.worker_pool = pool
    if pool == "gevent":
        # Under gevent Celery consumes in its blocking synloop, and with AMQP heartbeats
        # on it took about 100 ms per message (10 tasks/s received, measured; off: all at
        # once). A dead broker connection is still found by py-amqp's TCP keepalive.
        app.conf.broker_heartbeat = 0
    if settings.queue:
        # RELAYLINE_QUEUE: what this app sends (timers, recoveries) goes there, and a
        # worker started without -Q consumes it, so turns run on dedicated workers.
        app.conf.task_default_queue = settings.queue
    return app


def _runnable_pool(pool: str) -> str:
    """The configured pool, unless it is gevent in a process gevent has not patched:
    Celery patches only when the command line names the pool (``--pool gevent``, as
    ``relayline worker`` does), and greenlets in an unpatched process would block one
    another on every socket. Such a worker runs the threads pool (and says why when it
    starts: ``_explain_pool``; a process that only imports this app has nothing to say)."""
    return pool if pool != "gevent" or green.patched("socket") else "threads"


app = make_celery()


@worker_init.connect
@worker_process_init.connect
def _trace(**_: object) -> None:
    """Traces in the worker's main process (threads pool) and in each prefork child."""
    if telemetry.configure(Settings.from_env(), "relayline-worker"):
        telemetry.instrument(*telemetry.DEFAULT_PARTS)


@worker_init.connect
def _explain_pool(sender: WorkController, **_: object) -> None:
    """A relayline worker asked for gevent but running threads says why, once, at start."""
    asked = Settings.from_env().worker_pool
    if sender.app is app and asked == "gevent" and app.conf.relayline_pool == "threads":
        logger.warning(
            "RELAYLINE_WORKER_POOL=gevent, but this process is not monkey patched: start "
            "the worker with --pool gevent (relayline worker does). Running the threads pool."
        )


@worker_init.connect
def _serve_metrics(**_: object) -> None:
    """RELAYLINE_METRICS_PORT: this worker's metrics on 127.0.0.1 (prefork children share
    them through PROMETHEUS_MULTIPROC_DIR, as gunicorn's workers do)."""
    port = Settings.from_env().metrics_port
    if port is not None:
        prometheus_client.start_http_server(port, addr="127.0.0.1")


@worker_ready.connect
@worker_process_init.connect
def _tune_collector(**_: object) -> None:
    """Once the worker (or a prefork child) holds what it keeps: shared.collector."""
    collector.tune()
