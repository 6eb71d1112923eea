"""No message a worker takes off the broker ends the worker or comes back: what it cannot
run is dead-lettered (worker.dead_letter) and acknowledged.

``GuardedConsumer`` (relayline's own app sets it as ``worker_consumer``) checks every
task message (worker.task_messages) before Celery's strategy sees it, on any broker:
Celery's strategy raised in the main process on a body that is JSON but not
``[args, kwargs, embed]``, and the worker exited. The paths Celery itself keeps for
unknown tasks, undecodable bodies and invalid messages (which rejected or dropped them,
unrecorded) dead-letter too. On Redis, items that are not even kombu envelopes are
stopped earlier, in the transport (worker.intake).

``GuardedRequest`` (the Request class of every relayline task, on a host's app too)
refuses a job out of bounds (far too large, or nested past any request the web
accepts) in the worker's main process before a prefork pool pickles it: pickling such a
job killed the main process ("RecursionError while pickling").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery.worker.consumer import Consumer
from celery.worker.request import Request
from celery.worker.state import task_ready
from kombu.exceptions import ContentDisallowed
from kombu.message import Message

from relayline.worker.dead_letter import ReasonCode, Refusal, dead_letter
from relayline.worker.task_messages import bounds_refusal, refusal, task_of

__all__ = ["GuardedConsumer", "GuardedRequest"]

logger = logging.getLogger("relayline.worker")


class GuardedRequest(Request):
    """A Celery request that refuses a job out of bounds before the pool gets it.

    Celery builds a subclass per task whose ``execute_using_pool`` asks ``revoked()``
    first, in the main process, and drops a revoked request without pickling it: the
    hook a refusal needs (the TaskRevokedError it raises is caught and released)."""

    _checked = False
    _dead_lettered = False

    def revoked(self) -> bool:
        if self._dead_lettered:
            return True
        if self._checked:
            return bool(super().revoked())
        self._checked = True
        body = self.body or b""
        refused = bounds_refusal(len(body), self.args, self.kwargs)
        if refused is None:
            return bool(super().revoked())
        queue = self.delivery_info.get("routing_key")
        dead_letter(refused, body, task=self.name, task_id=self.id, queue=queue)
        self._dead_lettered = True
        task_ready(self)  # out of the worker's reserved set, as a revoked task leaves it
        self.acknowledge()  # never redelivered
        return True


class GuardedConsumer(Consumer):
    """Celery's consumer, dead-lettering every message it cannot run."""

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Callable[[Message], None]:
        handle: Callable[[Message], None] = super().create_task_handler(*args, **kwargs)
        tasks = self.app.tasks

        def on_task_received(message: Message) -> None:
            refused = refusal(message, tasks)
            if refused is not None:
                self._dead_letter(message, refused)
                return
            handle(message)

        return on_task_received

    # Celery's own paths for what it cannot run: reached only by what the check above
    # let through, and dead-lettered alike instead of dropped unrecorded.

    def on_decode_error(self, message: Message, exc: Exception) -> None:
        self._dead_letter(message, Refusal("undecodable", f"{type(exc).__name__}: {exc}"))

    def on_unknown_message(self, body: Any, message: Message) -> None:
        self._dead_letter(message, Refusal("not-task-shape", "not a task message"))

    def on_unknown_task(self, body: Any, message: Message, exc: Exception) -> None:
        self._dead_letter(message, Refusal("unknown-task", f"{type(exc).__name__}: {exc}"))

    def on_invalid_task(self, body: Any, message: Message, exc: Exception) -> None:
        # Celery calls this for a content type not accepted, or a message its Request
        # refused (an eta or expires it could not read)
        code: ReasonCode = "undecodable" if isinstance(exc, ContentDisallowed) else "bad-headers"
        self._dead_letter(message, Refusal(code, f"{type(exc).__name__}: {exc}"))

    def _dead_letter(self, message: Message, refused: Refusal) -> None:
        task, task_id = task_of(message)
        info: object = message.delivery_info
        queue = info.get("routing_key") if isinstance(info, dict) else None
        dead_letter(refused, message.body or b"", task=task, task_id=task_id, queue=_text(queue))
        consumer: Any = self  # celery-types does not declare connection_errors
        message.ack_log_error(logger, consumer.connection_errors)  # never delivered again


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
