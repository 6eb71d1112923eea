"""Run heartbeats as every process reads them: the key a worker's ``RunHeartbeat``
(worker.liveness) keeps alive while it executes a run, and the read that tells the web
a run's holder is gone (the run shows ``recovering`` until a recovery takes it over).

The key is set before the run is admitted and dropped only after the run's last write,
so a stored ``running`` run that a Celery task executes and that has no key has lost
its worker (or Redis lost the key: the holder sets it again within one renewal).
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from relayline.channels.keys import heartbeat_key


def without_heartbeat(client: redis.Redis, run_ids: Iterable[str]) -> set[str]:
    """Those of ``run_ids`` whose heartbeat is gone (one round trip)."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return set()
    # One EXISTS per key: the keys of different runs live in different cluster slots.
    pipe = client.pipeline(transaction=False)
    for run_id in ids:
        pipe.exists(heartbeat_key(run_id))
    return {run_id for run_id, beating in zip(ids, pipe.execute(), strict=True) if not beating}
