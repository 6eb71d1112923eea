"""A worker's model preflight: when the worker is ready, every agent it runs is loaded and
its provider checked (relayline.shared.preflight), and each problem is one WARNING line
on ``relayline.worker`` naming what to set. It runs on a thread of its own: a check waits
on connections (two seconds at most each), and the worker takes turns meanwhile. It
warns, nothing more: a model server may come up after the worker."""

from __future__ import annotations

import logging
import threading

from celery.signals import worker_ready

from relayline.shared.preflight import check_agents
from relayline.worker.resources import resources

logger = logging.getLogger("relayline.worker")


@worker_ready.connect
def _check_models(**_: object) -> None:
    threading.Thread(target=check_models, name="relayline-model-check", daemon=True).start()


def check_models() -> None:
    try:
        problems = check_agents(resources().registry)
    except Exception:  # the check never stops a worker
        logger.exception("the model check could not run")
        return
    for problem in problems:
        logger.warning("model check: %s", problem.text())
