"""relayline's Celery tasks on an application the host already runs::

    from relayline.worker import register
    register(celery_app)                 # or register(celery_app, queue="relayline")

(worker.registration says why registration is explicit.)"""

from __future__ import annotations

from worker.registration import register

__all__ = ["register"]
