"""Run coordination in Redis, as every process reads it: stop signals (``stops``),
turns queued behind a running one (``queued_turns``), turns sent but not started yet
(``backlog``, for admission control) and the heartbeats of workers executing runs
(``heartbeats``; the worker keeps them alive in ``relayline.worker.liveness``)."""
