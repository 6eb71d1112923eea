"""The host's own Celery application, with relayline's tasks registered on it::

    celery -A examples.flask_app.tasks worker -Q relayline,celery --pool threads

Its broker is the one relayline's web sends turns to (CELERY_BROKER_URL, else
REDIS_URL): an app on another broker would never receive a turn, and ``register``
says so in one warning. relayline's tasks go to RELAYLINE_QUEUE (``python -m
examples.flask_app`` sets ``relayline``), so dedicated workers can take only turns
(``-Q relayline``) while others run the host's own tasks."""

from __future__ import annotations

from celery import Celery

from relayline import Settings, register

celery = Celery("example_host", broker=Settings.from_env().broker_url)
celery.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    worker_prefetch_multiplier=1,  # a turn waits for a free worker, not behind another
)


@celery.task(name="example_host.greet")
def greet(name: str) -> str:
    """One of the host's own tasks, beside relayline's."""
    return f"Hello {name}"


register(celery)
