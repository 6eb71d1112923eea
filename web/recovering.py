"""``recovering``: the status a reload shows for a run whose worker is gone.

The stored status stays ``running`` (shared.records.RunStatus is what workers write and
fence on); the web derives ``recovering`` from the heartbeat (channels.liveness): a
``running`` run that a Celery task executes (its checkpoint names an executor) and
whose heartbeat lapsed waits for a worker's sweeper to enqueue its recovery, or for that
recovery to start. Stop works on it as on any running run: the stop is recorded on the
run, and the recovery's loop ends it ``cancelled`` at its first check. When Redis
cannot be read the stored status is shown.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Literal

from redis.exceptions import RedisError

from relayline.channels.runs.heartbeats import without_heartbeat
from relayline.shared.persistence import RunRecord
from relayline.shared.records import RunStatus
from relayline.web.services import Services

logger = logging.getLogger("relayline.web")

#: a run's status as the HTTP interface shows it
ShownStatus = RunStatus | Literal["recovering"]


def _executed_by_task(record: RunRecord) -> bool:
    return record.status == "running" and "executor" in record.checkpoint


def shown_status(svc: Services, record: RunRecord) -> ShownStatus:
    """``record``'s status, ``recovering`` while its holder is gone."""
    return shown_statuses(svc, [record]).get(record.run_id, record.status)


def shown_statuses(svc: Services, records: Iterable[RunRecord]) -> Mapping[str, ShownStatus]:
    """The shown status of each record, by run id (one Redis round trip)."""
    records = list(records)
    found: dict[str, ShownStatus] = {r.run_id: r.status for r in records}
    watched = [r.run_id for r in records if _executed_by_task(r)]
    if not watched:
        return found
    try:
        lost = without_heartbeat(svc.redis, watched)
    except RedisError as exc:
        logger.warning("could not read run heartbeats: %s", exc)
        return found
    for run_id in lost:
        found[run_id] = "recovering"
    return found
