"""relayline's tasks on any Celery application: its own (``relayline.worker.app``) and a host's.

Each task body in ``relayline.worker.tasks`` is a plain function declared with ``relayline_task``,
which keeps it here and registers it on relayline's own application; ``register`` puts
the same bodies, under the same names and options, on an application the host already
runs (``relayline.worker.register(celery_app)``). Registration is explicit rather than
``shared_task``: a shared task lands on every Celery app of the process (the web's
client included) with one set of options, while here each app gets relayline's options
and its own queue, and a host sees in its own code where relayline's tasks come from.

The names are the constants of ``relayline.shared.jobs`` on every application: the web sends
tasks by name, and a job queued by one deploy must be understood by the next one's
workers, so the names never move. What moves turns to dedicated workers is the queue
(RELAYLINE_QUEUE, or ``register(..., queue=...)``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery, Task
from kombu import Connection

from relayline.shared.settings import Settings
from relayline.worker import runlog  # noqa: F401  (connects the run log to every task)
from relayline.worker.app import TASK_SOFT_TIME_LIMIT, TASK_TIME_LIMIT, VISIBILITY_TIMEOUT, app
from relayline.worker.guard import GuardedRequest

logger = logging.getLogger("relayline.worker")

#: a task body: ``(task, job) -> outcome``, as ``relayline.worker.tasks`` defines them
TaskBody = Callable[..., str]

#: every body ``relayline.worker.tasks`` declared, by task name
BODIES: dict[str, TaskBody] = {}


def relayline_task(name: str) -> Callable[[TaskBody], Task[Any, str]]:
    """Declare a task body under ``name`` and register it on relayline's application."""

    def declare(body: TaskBody) -> Task[Any, str]:
        BODIES[name] = body
        return _declare(app, name, body, queue=None)

    return declare


def register(celery_app: Celery, *, queue: str | None = None) -> dict[str, Task[Any, str]]:
    """Register relayline's tasks on ``celery_app``; they are sent to ``queue`` (default
    RELAYLINE_QUEUE, else Celery's default queue). A worker of ``celery_app`` that
    consumes that queue runs turns; its processes read relayline's settings from the
    environment, as ``relayline worker`` does. Returns the tasks by name."""
    import relayline.worker.tasks  # noqa: F401  (declares the bodies)

    settings = Settings.from_env()
    queue = queue or settings.queue
    _warn_about_another_broker(celery_app, settings.broker_url)
    visibility = (celery_app.conf.broker_transport_options or {}).get("visibility_timeout")
    if visibility is not None and visibility <= TASK_TIME_LIMIT:
        logger.warning(
            "broker visibility_timeout %s s is not above relayline's task time limit (%s s): "
            "a long turn would be delivered twice; relayline uses %s s",
            visibility,
            TASK_TIME_LIMIT,
            VISIBILITY_TIMEOUT,
        )
    return {name: _declare(celery_app, name, body, queue) for name, body in BODIES.items()}


#: the broker a Celery app without ``broker_url`` connects to (Celery's own default)
CELERY_DEFAULT_BROKER = "amqp://guest:guest@localhost:5672//"


def _warn_about_another_broker(celery_app: Celery, relaylines: str | None) -> None:
    """One WARNING line when ``celery_app`` listens on another broker than the one
    relayline's web sends turns to (CELERY_BROKER_URL, else REDIS_URL): its workers
    would never receive a turn, and nothing else says so (the web is ready, the worker
    is ready, and every turn waits until the relay's timeout)."""
    if relaylines is None:
        return  # relayline's own app has no broker either: nothing sends turns yet
    hosts = celery_app.conf.broker_url or CELERY_DEFAULT_BROKER
    if _same_broker(hosts, relaylines):
        return
    logger.warning(
        "the Celery app %r uses the broker %s, but relayline sends turns to %s "
        "(CELERY_BROKER_URL, else REDIS_URL): its workers will never receive a turn; "
        "give the app relayline's broker (Celery(broker=Settings.from_env().broker_url))",
        celery_app.main,
        _shown(hosts),
        _shown(relaylines),
    )


def _same_broker(one: str, other: str) -> bool:
    """Whether two broker URLs name the same broker, once kombu has filled in the
    defaults each leaves out (``amqp://`` is ``amqp://guest:guest@localhost:5672//``,
    ``redis://h`` is ``redis://h:6379/0``)."""
    return _normalized(one) == _normalized(other)


def _normalized(url: str) -> str:
    uri = str(Connection(url).as_uri(include_password=True))
    if uri.startswith(("redis://", "rediss://")) and uri.endswith("//"):
        return uri[:-1] + "0"  # Redis's database 0 when the URL names none
    return uri


def _shown(url: str) -> str:
    """A broker URL without its password, for the log."""
    return str(Connection(url).as_uri())


def _declare(celery_app: Celery, name: str, body: TaskBody, queue: str | None) -> Task[Any, str]:
    """``body`` as the task ``name`` of ``celery_app``, with the options every relayline
    task has on any application (docs/DESIGN.md section 3, worker loss): acknowledged
    after the run and redelivered when its worker is lost, time-limited below the
    broker's visibility timeout, no results kept, JSON only, guarded against poison jobs."""
    routing: dict[str, Any] = {"queue": queue} if queue else {}
    declare = celery_app.task(
        name=name,
        bind=True,
        Request=GuardedRequest,
        acks_late=True,
        reject_on_worker_lost=True,
        soft_time_limit=TASK_SOFT_TIME_LIMIT,
        time_limit=TASK_TIME_LIMIT,
        ignore_result=True,
        serializer="json",
        # Not Celery's default "shared": a shared task lands on every app of the process
        # (the web's client too) as it was declared first, without this app's queue.
        shared=False,
        **routing,
    )
    # celery-types cannot bind a body of unknown parameters; the Task is what it makes.
    task: Task[Any, str] = declare(body)  # type: ignore[no-untyped-call]
    return task
