"""Every Redis key and Pub/Sub channel relayline writes, built in one place.

``KEYS`` describes each of them (type, lifetime, writer, readers); docs/redis.md shows
the same table, and a test keeps the two equal and checks that no other module spells
a ``relayline:`` key. The ``{...}`` part of a name is a Redis Cluster hash tag: every
key of one segment, thread or run lands in one slot, so a script may touch them
together. The Celery broker's own keys (kombu's lists and sets) are not ours.
"""

from __future__ import annotations

import dataclasses


# The segment log (relayline.channels.stream): one Redis stream per segment.
def log_key(segment_id: str) -> str:
    return f"relayline:{{seg:{segment_id}}}:log"


def fence_key(segment_id: str) -> str:
    """The lowest attempt of its run that may still write the segment's log: set by the
    process that took the run over (its recovery), so the lost writer's appends are
    refused (channels.stream.log)."""
    return f"relayline:{{seg:{segment_id}}}:fence"


def active_key(thread_id: str) -> str:
    """The thread's running segment (protocol and id), while it runs."""
    return f"relayline:{{thread:{thread_id}}}:active"


def latest_key(thread_id: str) -> str:
    """The thread's newest segment, running or ended, while its log is kept."""
    return f"relayline:{{thread:{thread_id}}}:latest"


def segments_key(thread_id: str) -> str:
    """Every segment id of the thread whose log may still be kept (what a delete erases)."""
    return f"relayline:{{thread:{thread_id}}}:segments"


def reader_wake_key(token: str) -> str:
    """The list a web process's log reader blocks on beside the logs, pushed to wake it."""
    return f"relayline:reader:{token}:wake"


# Run coordination (relayline.channels.runs and relayline.worker.liveness).
#: Pub/Sub channel on which the web announces a stop to every worker process
STOPS_CHANNEL = "relayline:stops"
#: sorted set of segments sent to the broker that no worker has started yet
QUEUED_KEY = "relayline:{queued}"
#: sorted set of live worker names scored by their last beat (channels.runs.workers)
WORKERS_KEY = "relayline:workers"
#: a lock that lets one worker process at a time sweep for runs that lost their worker
SWEEP_LOCK = "relayline:sweeper"
#: a list of broker messages no worker can run, with the reason
DEAD_LETTER = "relayline:dead-letter"


def pending_stop_key(segment_id: str) -> str:
    """Who took the segment's start first: a stop that arrived before its task started,
    or the task (``run:<run id>``) (channels.runs.claims)."""
    return f"relayline:{{seg:{segment_id}}}:stop"


def queue_key(thread_id: str) -> str:
    """Turns sent while the thread had a run going, in order."""
    return f"relayline:{{thread:{thread_id}}}:queue"


def owner_queued_key(owner: str) -> str:
    """``QUEUED_KEY`` for one owner (one hash tag with it: a script updates both)."""
    return f"{QUEUED_KEY}:owner:{owner}"


def heartbeat_key(run_id: str) -> str:
    """The heartbeat of the worker executing the run: its holder, with a short TTL."""
    return f"relayline:{{run:{run_id}}}:hb"


def job_key(run_id: str) -> str:
    """The job a run executes, kept so a recovery can send it again."""
    return f"relayline:{{run:{run_id}}}:job"


def continuation_key(run_id: str, attempt: int) -> str:
    """The segment of the one request that answers the run's interruption at
    ``attempt`` (channels.runs.claims)."""
    return f"relayline:{{run:{run_id}}}:answer:{attempt}"


def recovery_key(run_id: str, attempt: int) -> str:
    """Claimed by the one process that recovers ``attempt`` of the run."""
    return f"relayline:{{run:{run_id}}}:recovery:{attempt}"


@dataclasses.dataclass(frozen=True)
class KeySpec:
    """One row of the key table (docs/redis.md)."""

    #: the name, with <placeholders> for what the builder takes
    name: str
    #: the Redis type (or "pub/sub channel")
    type: str
    #: how long it lives
    lifetime: str
    #: who writes it
    writer: str
    #: who reads it
    readers: str


KEYS: tuple[KeySpec, ...] = (
    KeySpec(
        "relayline:{seg:<segment>}:log",
        "stream",
        "max age while running (RELAYLINE_STREAM_MAX_AGE), retention after its terminal",
        "worker (SegmentLog, group commit)",
        "web (relay reader, resume, envelopes route), worker (recovery)",
    ),
    KeySpec(
        "relayline:{seg:<segment>}:fence",
        "string",
        "max age (RELAYLINE_STREAM_MAX_AGE)",
        "worker (the takeover of a run: its recovery)",
        "worker (SegmentLog: every append checks it)",
    ),
    KeySpec(
        "relayline:{seg:<segment>}:stop",
        "string",
        "max age (RELAYLINE_STREAM_MAX_AGE): as long as the segment may be active",
        "web (stop before start, withdrawal: withdrawn), worker (as the task starts: run:<run>)",
        "web (stop), worker (as the task starts)",
    ),
    KeySpec(
        "relayline:{thread:<thread>}:active",
        "string",
        "max age; deleted at the terminal",
        "web (announce), worker (terminal)",
        "web (reconnect, stop, thread API)",
    ),
    KeySpec(
        "relayline:{thread:<thread>}:latest",
        "string",
        "max age, then the retention",
        "worker (SegmentLog)",
        "web (resume after the end)",
    ),
    KeySpec(
        "relayline:{thread:<thread>}:segments",
        "set",
        "max age, renewed per segment",
        "web (announce), worker (SegmentLog)",
        "web (thread delete)",
    ),
    KeySpec(
        "relayline:{thread:<thread>}:queue",
        "list",
        "queue wait after the last append",
        "web (double texting: enqueue)",
        "worker (next turn at the end of a run)",
    ),
    KeySpec(
        "relayline:{queued}",
        "sorted set",
        "trimmed past the queue age at every admission",
        "web (admit), worker (started)",
        "web (admission, /readyz)",
    ),
    KeySpec(
        "relayline:{queued}:owner:<owner>",
        "sorted set",
        "as relayline:{queued}",
        "web (admit), worker (started)",
        "web (admission per owner)",
    ),
    KeySpec(
        "relayline:{run:<run>}:hb",
        "string",
        "heartbeat TTL (RELAYLINE_HEARTBEAT_TTL, 15 s), renewed every interval",
        "worker (RunHeartbeat)",
        "worker (sweeper), web (run status: recovering)",
    ),
    KeySpec(
        "relayline:{run:<run>}:job",
        "string",
        "as long as the run may be recovered",
        "worker (RunHeartbeat)",
        "worker (recovery)",
    ),
    KeySpec(
        "relayline:{run:<run>}:answer:<attempt>",
        "string",
        "relay timeout (RELAYLINE_RELAY_TIMEOUT), or until its request failed to send",
        "web (continuation: the first answer's segment)",
        "web (continuation: later answers are refused)",
    ),
    KeySpec(
        "relayline:{run:<run>}:recovery:<attempt>",
        "string",
        "four heartbeat TTLs",
        "worker (sweeper)",
        "worker",
    ),
    KeySpec(
        "relayline:workers",
        "sorted set",
        "heartbeat TTL after the last beat; members trimmed past it at every read",
        "worker (presence)",
        "web (/readyz)",
    ),
    KeySpec(
        "relayline:sweeper",
        "string",
        "one sweep interval",
        "worker (sweeper)",
        "worker (sweeper)",
    ),
    KeySpec(
        "relayline:stops",
        "pub/sub channel",
        "none (messages)",
        "web (stop)",
        "worker (stop watch)",
    ),
    KeySpec(
        "relayline:reader:<token>:wake",
        "list",
        "one day, renewed while the reader lives",
        "web (log reader)",
        "web (log reader)",
    ),
    KeySpec(
        "relayline:dead-letter",
        "list",
        "none; the newest 1000 entries are kept",
        "worker (guard, intake)",
        "operator",
    ),
)
