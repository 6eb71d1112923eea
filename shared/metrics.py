"""Prometheus metrics (prometheus_client): what an operator watches. Defined once here;
recorded by the loop (model calls, tokens, tool executions), the worker (runs by
outcome, turn duration: worker.runlog) and the web (open relayed streams, events
relayed, time to first event: web.dispatch), and served by ``relayline.web.metrics`` at
``/metrics`` and by a worker on ``RELAYLINE_METRICS_PORT``.

Multiprocess-safe for gunicorn: with ``PROMETHEUS_MULTIPROC_DIR`` set, every process
writes its samples there and ``/metrics`` aggregates them (prometheus_client's own
multiprocess mode; gauges sum the live processes).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RUNS = Counter(
    "relayline_runs",
    "Run transitions by agent and event: started, resumed, recovered, completed, "
    "suspended, failed, cancelled.",
    ["agent", "event"],
)
TURN_SECONDS = Histogram(
    "relayline_task_duration_seconds",
    "How long a worker task (a turn or a continuation) ran, by agent and outcome.",
    ["agent", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
)
MODEL_CALLS = Counter("relayline_model_calls", "Model calls, by outcome.", ["outcome"])
TOKENS = Counter("relayline_tokens", "Tokens the models reported, by kind.", ["kind"])
TOOL_EXECUTIONS = Counter(
    "relayline_tool_executions",
    "Backend tool executions, by tool and outcome.",
    ["tool", "outcome"],
)
OPEN_STREAMS = Gauge(
    "relayline_relayed_streams_open",
    "Relayed SSE responses open now.",
    multiprocess_mode="livesum",
)
EVENTS_RELAYED = Counter("relayline_events_relayed", "Events relayed to SSE clients.")
RELAY_DIRECT_WRITES = Counter(
    "relayline_relay_direct_writes",
    "Socket writes of relayed frames the log reader made itself (web.direct), by "
    "outcome: whole; partial (the response sent the rest); gone (the client had left).",
    ["outcome"],
)
SLOW_CLIENTS_DROPPED = Counter(
    "relayline_slow_clients_dropped",
    "Relayed clients dropped for leaving more unread than RELAYLINE_CLIENT_BUFFER_BYTES "
    "(web.slow_clients); each may resume from the last event it received.",
)
FIRST_EVENT_SECONDS = Histogram(
    "relayline_time_to_first_event_seconds",
    "From a turn's request to its first relayed event.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
QUEUED_TURNS = Gauge(
    "relayline_queued_turns",
    "Turns sent to the broker that no worker has started yet (read at scrape).",
    multiprocess_mode="max",
)
REDIS_MEMORY = Gauge(
    "relayline_redis_used_memory_bytes",
    "Redis' used_memory at scrape: the segment logs live there (with Pub/Sub, the "
    "broker's queues when Redis is the broker, and heartbeats).",
    multiprocess_mode="max",
)
