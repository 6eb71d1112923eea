"""The worker process: relayline's Celery app, its tasks and run liveness.

An application that runs its own Celery app registers relayline's tasks on it::

    from relayline import register
    register(celery_app)                 # or register(celery_app, queue="relayline")

(``relayline.worker.registration`` says why registration is explicit.) ``register`` is
imported on first use: importing any module of this package must not build relayline's own
Celery app (``relayline.worker.app``), which needs a broker URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relayline.worker.registration import register

__all__ = ["register"]


def __getattr__(name: str) -> object:
    if name == "register":
        from relayline.worker.registration import register

        return register
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
