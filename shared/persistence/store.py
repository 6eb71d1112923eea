"""Durable threads, messages and runs on SQLAlchemy 2 (SQLite by default, PostgreSQL).

Every run mutation is a compare-and-set on ``runs.version`` inside one transaction that
also appends the messages the step produced, so a lost race writes nothing at all.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection, Engine

from relayline.shared.database_urls import with_driver
from relayline.shared.errors import ConflictError, RunInFlightError
from relayline.shared.interrupts import InterruptJSON
from relayline.shared.jsonutil import dumps
from relayline.shared.messages import Message
from relayline.shared.persistence import statements
from relayline.shared.persistence.schema import messages, runs, threads
from relayline.shared.records import ACTIVE_STATUSES, Accepted, Checkpoint, RunStart, RunStatus

ACTIVE = ACTIVE_STATUSES


class StopRequestedError(ConflictError):
    """A stop was recorded on the run since it was read, and the write would have ended
    it another way (``write_run(unless_stopped=True)``): nothing was written. ``record``
    is the run as it stands; its writer ends it ``cancelled`` instead."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(
            f"Run '{record.run_id}' on thread '{record.thread_id}' was asked to stop; "
            "nothing was written."
        )
        self.record = record


class Unchanged(enum.Enum):
    """The default of ``write_run``'s fields: keep what the record holds (None is a
    value some fields are set to)."""

    UNCHANGED = "unchanged"


UNCHANGED: Final = Unchanged.UNCHANGED
#: ids per lookup query: far below every supported database's bound-parameter limit
_ID_BATCH = 2000


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(moment: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything we write is UTC.
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


@dataclasses.dataclass(frozen=True)
class ThreadRecord:
    id: str
    owner: str
    current_run_id: str | None
    version: int


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One durable run. ``accepted`` holds decisions and results by call id;
    ``checkpoint`` holds the loop's position (model calls, the open tool batch)."""

    thread_id: str
    run_id: str
    status: RunStatus
    attempt: int
    version: int
    interrupt: InterruptJSON | None
    accepted: Accepted
    checkpoint: Checkpoint
    start: RunStart
    error: str | None
    lease_expires_at: datetime | None
    updated: datetime
    #: when a stop was asked for (set by ``request_stop``, outside the version check)
    stop_requested: datetime | None = None


@dataclasses.dataclass(frozen=True)
class ThreadSummary:
    """One line of a person's thread list: ``title`` is the first user message's text
    (cut to ``TITLE_CHARS``), ``updated`` the current run's last write (else the
    thread's creation), ``status`` the current run's status (None before any run)."""

    id: str
    title: str
    updated: datetime
    status: RunStatus | None


#: characters of the first message a thread's title keeps
TITLE_CHARS = 80


class Store:
    """Persistence for threads, messages and runs. Safe to share between threads; each
    process builds its own (engines are not shared across fork)."""

    def __init__(self, url: str, *, migrate: bool = True, **engine_options: Any) -> None:
        url = with_driver(url)  # postgres:// as hosts give it
        if url.startswith("sqlite"):
            engine_options.setdefault("connect_args", {"timeout": 30})
        else:
            # A restarted server (failover, upgrade) cuts every pooled connection: test
            # each at checkout, or the first request of every process after it is a 500.
            engine_options.setdefault("pool_pre_ping", True)
        self.url = url
        self.engine: Engine = sa.create_engine(url, **engine_options)
        if url.startswith("sqlite"):
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        if migrate:
            self.migrate()

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (idempotent)."""
        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Concurrent processes migrating the same database wait for each other.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7215001)"))
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def dispose(self) -> None:
        self.engine.dispose()

    # threads -------------------------------------------------------------

    def thread(self, thread_id: str) -> ThreadRecord | None:
        with self.engine.connect() as conn:
            return _thread(conn, thread_id)

    def create_thread(self, thread_id: str, owner: str) -> ThreadRecord:
        """The thread, created for ``owner`` when absent (an existing owner is kept)."""
        with self.engine.begin() as conn:
            found = _thread(conn, thread_id)
            if found is not None:
                return found
            conn.execute(
                threads.insert().values(id=thread_id, owner=owner, version=0, created=utcnow())
            )
            return ThreadRecord(thread_id, owner, None, 0)

    def list_threads(
        self, owner: str, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> list[ThreadSummary]:
        """``owner``'s threads, the most recently updated first (ties by id, descending);
        a page starts after the ``(updated, id)`` of the previous page's last line."""
        if limit < 1:
            raise ValueError("limit must be a positive integer.")
        updated = sa.func.coalesce(runs.c.updated, threads.c.created).label("updated")
        query = (
            sa.select(threads.c.id, updated, runs.c.status)
            .select_from(
                threads.outerjoin(
                    runs,
                    sa.and_(
                        runs.c.thread_id == threads.c.id,
                        runs.c.run_id == threads.c.current_run_id,
                    ),
                )
            )
            .where(threads.c.owner == owner)
        )
        if after is not None:
            moment, last_id = after
            query = query.where(
                sa.or_(updated < moment, sa.and_(updated == moment, threads.c.id < last_id))
            )
        query = query.order_by(updated.desc(), threads.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            rows = list(conn.execute(query))
            titles = _titles(conn, [r.id for r in rows])
        return [
            ThreadSummary(r.id, titles.get(r.id, ""), _aware(r.updated) or utcnow(), r.status)
            for r in rows
        ]

    def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread with its messages and runs, in one transaction; whether it
        existed."""
        with self.engine.begin() as conn:
            conn.execute(messages.delete().where(messages.c.thread_id == thread_id))
            conn.execute(runs.delete().where(runs.c.thread_id == thread_id))
            gone = conn.execute(threads.delete().where(threads.c.id == thread_id))
            return gone.rowcount == 1

    # messages ------------------------------------------------------------

    def messages(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Message]:
        """The thread's messages in order; a page is the newest ``limit`` before the
        stored message id ``before`` (an unknown ``before`` gives an empty page)."""
        if limit is not None and limit < 1:
            raise ValueError("limit must be a positive integer.")
        if limit is None and before is None:  # the whole history: the loop's read
            with self.engine.connect() as conn:
                return _messages(conn, thread_id)
        query = sa.select(messages).where(messages.c.thread_id == thread_id)
        with self.engine.connect() as conn:
            if before is not None:
                anchor = conn.execute(
                    sa.select(messages.c.id).where(
                        messages.c.thread_id == thread_id, messages.c.message_id == before
                    )
                ).scalar()
                if anchor is None:
                    return []
                query = query.where(messages.c.id < anchor)
            if limit is not None:
                rows = list(conn.execute(query.order_by(messages.c.id.desc()).limit(limit)))
                rows.reverse()
            else:
                rows = list(conn.execute(query.order_by(messages.c.id)))
        return [_message(r._mapping) for r in rows]

    def stored_message_ids(self, thread_id: str, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` name a message stored on the thread (an indexed lookup, one
        query for up to ``_ID_BATCH`` ids), without loading any message."""
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), _ID_BATCH):
                found.update(
                    conn.execute(
                        sa.select(messages.c.message_id).where(
                            messages.c.thread_id == thread_id,
                            messages.c.message_id.in_(wanted[start : start + _ID_BATCH]),
                        )
                    ).scalars()
                )
        return found

    def append_messages(self, thread_id: str, items: Sequence[Message]) -> None:
        """Append messages; a message id already stored on the thread is skipped."""
        with self.engine.begin() as conn:
            _append(conn, thread_id, items)

    # runs ----------------------------------------------------------------

    def current_run(self, thread_id: str) -> RunRecord | None:
        """The thread's current run (one query)."""
        with self.engine.connect() as conn:
            row = conn.execute(statements.CURRENT_RUN, {"b_thread": thread_id}).first()
        return None if row is None else _run_record(row)

    def run(self, thread_id: str, run_id: str) -> RunRecord | None:
        with self.engine.connect() as conn:
            return _run(conn, thread_id, run_id)

    def running_runs(self, limit: int = 500) -> list[RunRecord]:
        """Runs whose status is ``running``, oldest update first (what a sweeper checks
        for a lapsed heartbeat)."""
        query = sa.select(runs).where(runs.c.status == "running").order_by(runs.c.updated)
        with self.engine.connect() as conn:
            return [_run_record(row) for row in conn.execute(query.limit(limit))]

    def begin_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        owner: str,
        start: RunStart,
        first_messages: Sequence[Message],
        lease_expires_at: datetime,
        checkpoint: Checkpoint | None = None,
    ) -> RunRecord:
        """Make ``run_id`` the thread's current run, refusing while another is active."""
        return self.admit_run(
            thread_id,
            run_id,
            owner=owner,
            start=start,
            first_messages=first_messages,
            lease_expires_at=lease_expires_at,
            checkpoint=checkpoint,
            history=False,
        )[0]

    def admit_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        owner: str,
        start: RunStart,
        first_messages: Sequence[Message],
        lease_expires_at: datetime,
        checkpoint: Checkpoint | None = None,
        history: bool = True,
    ) -> tuple[RunRecord, list[Message]]:
        """``begin_run``, and (``history``) the thread's messages as it leaves them, read
        in the same transaction: a new turn's first model call needs no read of its own,
        and a thread this call creates holds only ``first_messages`` (no read at all)."""
        now = utcnow()
        with self.engine.begin() as conn:
            found = _thread(conn, thread_id)
            if found is None:
                # A new thread: no run can exist on it (runs.thread_id references it),
                # so it is inserted already pointing at the run.
                row = {"id": thread_id, "owner": owner, "current_run_id": run_id}
                conn.execute(statements.INSERT_THREAD, {**row, "version": 1, "created": now})
            else:
                self._make_current(conn, found, run_id)
            record = RunRecord(
                thread_id=thread_id,
                run_id=run_id,
                status="running",
                attempt=1,
                version=1,
                interrupt=None,
                accepted=Accepted(),
                checkpoint=Checkpoint() if checkpoint is None else checkpoint,
                start=start,
                error=None,
                lease_expires_at=lease_expires_at,
                updated=now,
            )
            conn.execute(statements.INSERT_RUN, {**_run_row(record), "created": now})
            rows = _append(conn, thread_id, first_messages, known_none=found is None)
            if not history:
                return record, []
            if found is None:
                return record, [_message(row) for row in rows]
            return record, _messages(conn, thread_id)

    @staticmethod
    def _make_current(conn: Connection, found: ThreadRecord, run_id: str) -> None:
        """Point an existing thread at ``run_id`` unless another run is active on it."""
        thread_id = found.id
        if found.current_run_id is not None:
            current = _run(conn, thread_id, found.current_run_id)
            if current is not None and current.status in ACTIVE:
                raise RunInFlightError(_in_flight_message(current))
        if _run(conn, thread_id, run_id) is not None:
            raise ConflictError(f"Run '{run_id}' already exists on thread '{thread_id}'.")
        moved = conn.execute(
            statements.MOVE_THREAD,
            {
                "b_thread": thread_id,
                "b_version": found.version,
                "current_run_id": run_id,
                "version": found.version + 1,
            },
        )
        if moved.rowcount != 1:
            raise ConflictError(
                f"Another turn started on thread '{thread_id}' at the same time; retry.",
            )

    def write_run(
        self,
        record: RunRecord,
        *,
        append: Sequence[Message] = (),
        status: RunStatus | Unchanged = UNCHANGED,
        attempt: int | Unchanged = UNCHANGED,
        interrupt: InterruptJSON | Unchanged | None = UNCHANGED,
        accepted: Accepted | Unchanged = UNCHANGED,
        checkpoint: Checkpoint | Unchanged = UNCHANGED,
        error: str | Unchanged | None = UNCHANGED,
        lease_expires_at: datetime | Unchanged | None = UNCHANGED,
        fresh: bool = False,
        unless_stopped: bool = False,
    ) -> RunRecord:
        """Compare-and-set the given fields onto the run (the others are kept);
        ``append`` goes in the same transaction (``fresh``: its ids were just made, so
        none can be stored yet and none is looked up). ``unless_stopped``: write only
        while no stop is recorded on the run (``request_stop`` is the other half: one
        conditional update each, so exactly one of a stop and this write wins).

        Raises ConflictError (nothing written) when the run moved since ``record``, and
        StopRequestedError (nothing written) when only a stop was recorded since."""
        updated = RunRecord(
            thread_id=record.thread_id,
            run_id=record.run_id,
            status=record.status if status is UNCHANGED else status,
            attempt=record.attempt if attempt is UNCHANGED else attempt,
            version=record.version + 1,
            interrupt=record.interrupt if interrupt is UNCHANGED else interrupt,
            accepted=record.accepted if accepted is UNCHANGED else accepted,
            checkpoint=record.checkpoint if checkpoint is UNCHANGED else checkpoint,
            start=record.start,
            error=record.error if error is UNCHANGED else error,
            lease_expires_at=(
                record.lease_expires_at if lease_expires_at is UNCHANGED else lease_expires_at
            ),
            updated=utcnow(),
            stop_requested=record.stop_requested,
        )
        statement = statements.WRITE_RUN_UNLESS_STOPPED if unless_stopped else statements.WRITE_RUN
        with self.engine.begin() as conn:
            moved = conn.execute(
                statement,
                {
                    **_run_row(updated),
                    "b_thread": record.thread_id,
                    "b_run": record.run_id,
                    "b_version": record.version,
                },
            )
            if moved.rowcount != 1:
                found = _run(conn, record.thread_id, record.run_id) if unless_stopped else None
                if found is not None and found.version == record.version and found.stop_requested:
                    raise StopRequestedError(found)
                raise ConflictError(
                    f"Run '{record.run_id}' on thread '{record.thread_id}' was changed by "
                    f"another process (attempt {record.attempt}); nothing was written.",
                )
            _append(conn, record.thread_id, append, known_none=fresh)
        return updated

    def request_stop(self, thread_id: str, run_id: str) -> RunRecord | None:
        """Record that a person asked to stop the run, when it is active; the run as it
        stands after (None when it does not exist). Idempotent: the first time is kept.
        Touches neither ``version`` nor any field a worker writes, so it never fences
        out the worker that will act on it."""
        with self.engine.begin() as conn:
            conn.execute(
                runs.update()
                .where(
                    runs.c.thread_id == thread_id,
                    runs.c.run_id == run_id,
                    runs.c.status.in_(ACTIVE),
                    runs.c.stop_requested.is_(None),
                )
                .values(stop_requested=utcnow())
            )
            return _run(conn, thread_id, run_id)

    def stop_requested(self, thread_id: str, run_id: str) -> bool:
        """Whether a stop was asked for the run (one indexed read of one column)."""
        with self.engine.connect() as conn:
            moment = conn.execute(
                statements.STOP_REQUESTED, {"b_thread": thread_id, "b_run": run_id}
            ).scalar()
        return moment is not None


def _titles(conn: Connection, thread_ids: Sequence[str]) -> dict[str, str]:
    """Each thread's first user message text, cut to ``TITLE_CHARS`` (one query)."""
    if not thread_ids:
        return {}
    first = (
        sa.select(sa.func.min(messages.c.id))
        .where(messages.c.thread_id.in_(thread_ids), messages.c.role == "user")
        .group_by(messages.c.thread_id)
    )
    rows = conn.execute(
        sa.select(messages.c.thread_id, messages.c.content).where(messages.c.id.in_(first))
    )
    titles: dict[str, str] = {}
    for row in rows:
        text = Message.from_stored("", "user", json.loads(row.content), None).text
        titles[row.thread_id] = " ".join(text.split())[:TITLE_CHARS]
    return titles


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL: a commit is not fsynced, only each checkpoint is. A crash of the
    # process loses nothing; a power loss may lose the last commits, never the file's
    # consistency (docs/deployment.md states the trade-off). PostgreSQL is unchanged.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _thread(conn: Connection, thread_id: str) -> ThreadRecord | None:
    row = conn.execute(statements.THREAD, {"b_thread": thread_id}).first()
    if row is None:
        return None
    return ThreadRecord(row.id, row.owner, row.current_run_id, row.version)


def _run(conn: Connection, thread_id: str, run_id: str) -> RunRecord | None:
    row = conn.execute(statements.RUN, {"b_thread": thread_id, "b_run": run_id}).first()
    return None if row is None else _run_record(row)


def _run_record(row: sa.Row[Any]) -> RunRecord:
    return RunRecord(
        thread_id=row.thread_id,
        run_id=row.run_id,
        status=row.status,
        attempt=row.attempt,
        version=row.version,
        interrupt=json.loads(row.interrupt) if row.interrupt else None,
        accepted=json.loads(row.accepted),
        checkpoint=json.loads(row.checkpoint),
        start=json.loads(row.start),
        error=row.error,
        lease_expires_at=_aware(row.lease_expires_at),
        updated=_aware(row.updated) or utcnow(),
        stop_requested=_aware(row.stop_requested),
    )


def _run_row(record: RunRecord) -> dict[str, Any]:
    return {
        "thread_id": record.thread_id,
        "run_id": record.run_id,
        "status": record.status,
        "attempt": record.attempt,
        "version": record.version,
        "interrupt": dumps(record.interrupt) if record.interrupt is not None else None,
        "accepted": dumps(record.accepted),
        "checkpoint": dumps(record.checkpoint),
        "start": dumps(record.start),
        "error": record.error,
        "lease_expires_at": record.lease_expires_at,
        "updated": record.updated,
    }


def _message(row: Mapping[Any, Any]) -> Message:
    meta = row["meta"]
    return Message.from_stored(
        row["message_id"],
        row["role"],
        json.loads(row["content"]),
        json.loads(meta) if meta else None,
    )


def _messages(conn: Connection, thread_id: str) -> list[Message]:
    rows = conn.execute(statements.MESSAGES, {"b_thread": thread_id})
    return [_message(r._mapping) for r in rows]


def _append(
    conn: Connection, thread_id: str, items: Iterable[Message], *, known_none: bool = False
) -> list[dict[str, Any]]:
    """Insert the messages not yet stored on the thread; the rows inserted.
    ``known_none``: none can be stored (a thread created in this transaction, ids just
    made): no lookup."""
    items = list(items)
    if not items:
        return []
    known: set[str] = set()
    if not known_none:
        ids = [m.id for m in items]
        known.update(
            conn.execute(statements.STORED_IDS, {"b_thread": thread_id, "b_ids": ids}).scalars()
        )
    now = utcnow()
    rows = []
    for item in items:
        if item.id in known:
            continue
        known.add(item.id)
        rows.append(
            {
                "thread_id": thread_id,
                "message_id": item.id,
                "role": item.role,
                "content": dumps(item.content_json()),
                "meta": dumps(item.meta) if item.meta else None,
                "created": now,
            }
        )
    if rows:
        conn.execute(statements.INSERT_MESSAGES, rows)
    return rows


def _in_flight_message(current: RunRecord) -> str:
    waiting = ""
    if current.status == "suspended" and current.interrupt:
        waiting = (
            f", waiting on #{current.interrupt.get('interruptId')} "
            f"{current.interrupt.get('eventName')}"
        )
    return (
        f"Cannot start a new turn on thread '{current.thread_id}': run '{current.run_id}' "
        f"(attempt {current.attempt}) is {current.status}{waiting}. "
        "Answer or wait for it first."
    )
