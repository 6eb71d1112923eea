"""The host's own Celery application, with relayline's tasks registered on it::

    celery -A examples.flask_app.tasks worker -Q relayline,celery

Its broker comes from CELERY_BROKER_URL (Celery reads it); relayline's tasks go to
RELAYLINE_QUEUE (here ``relayline``), so dedicated workers can take only turns
(``-Q relayline``) while others run the host's own tasks."""

from __future__ import annotations

from celery import Celery

from relayline import register

celery = Celery("example_host")
celery.conf.update(task_serializer="json", accept_content=["json"], task_ignore_result=True)


@celery.task(name="example_host.greet")
def greet(name: str) -> str:
    """One of the host's own tasks, beside relayline's."""
    return f"Hello {name}"


register(celery)
