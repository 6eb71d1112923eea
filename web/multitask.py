"""Double texting: what a new turn does when a run already holds its thread.

``?multitask=`` (AG-UI also ``forwardedProps.multitask``), else the agent's
``AgentSpec.multitask``: ``reject`` (409, the default), ``interrupt`` (stop the run as
Stop does, wait for it to end, then start the turn; a suspended run's open calls are
settled as stopped, never dropped silently), or ``enqueue`` (the turn starts when the
run ends; a relayed response says ``X-Relayline-Queued: <position>``, a pushed one
``"queued": <position>``, and a native stream begins with a ``queued`` frame).
"""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import BadRequest

from relayline.shared.agent.spec import MULTITASK_STRATEGIES, AgentSpec, MultitaskStrategy
from relayline.shared.errors import RunInFlightError
from relayline.shared.persistence import RunRecord
from relayline.shared.records import ACTIVE_STATUSES
from relayline.web.dispatch import refuse_if_busy
from relayline.web.services import services
from relayline.web.stop import stop_and_wait

#: how long ``interrupt`` waits for the running run to act on its stop
INTERRUPT_WAIT_SECONDS = 10.0


def strategy(spec: AgentSpec, forwarded: object = None) -> MultitaskStrategy:
    raw = request.args.get("multitask")
    if raw is None and isinstance(forwarded, dict):
        raw = forwarded.get("multitask")
    if raw is None:
        return spec.multitask
    for known in MULTITASK_STRATEGIES:
        if raw == known:
            return known
    raise BadRequest(f"'multitask' must be one of {', '.join(MULTITASK_STRATEGIES)}.")


def make_room(thread_id: str, record: RunRecord | None, chosen: MultitaskStrategy) -> bool:
    """Whether the new turn may start now (False: queue it). Raises the 409 for
    ``reject``, and for ``interrupt`` when the run does not stop in time."""
    if record is None or record.status not in ACTIVE_STATUSES:
        return True
    if chosen == "reject":
        refuse_if_busy(thread_id, record)
        return True
    if chosen == "enqueue":
        return False
    still = stop_and_wait(services(), thread_id, INTERRUPT_WAIT_SECONDS)
    if still is not None:
        raise RunInFlightError(
            f"Run '{still}' on thread '{thread_id}' did not stop within "
            f"{INTERRUPT_WAIT_SECONDS:.0f} s; try again.",
            code="THREAD_BUSY",
        )
    return True
