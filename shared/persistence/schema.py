"""The three tables (docs/DESIGN.md section 7). Alembic migrations create them; this module is
the single definition both the migrations' autogenerate and the store read."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

threads = sa.Table(
    "threads",
    metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    # The run that holds the thread; compare-and-set on ``version`` serialises new turns.
    sa.Column("current_run_id", sa.String(128), nullable=True),
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    # A person's thread list (``Store.list_threads``) filters by owner.
    sa.Index("ix_threads_owner", "owner"),
)

messages = sa.Table(
    "messages",
    metadata,
    # Auto-increment id orders the thread; message ids are the stable public ids.
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column("thread_id", sa.String(128), sa.ForeignKey("threads.id"), nullable=False),
    sa.Column("message_id", sa.String(64), nullable=False),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("meta", sa.Text, nullable=True),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("thread_id", "message_id", name="uq_messages_thread_message"),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("thread_id", sa.String(128), sa.ForeignKey("threads.id"), primary_key=True),
    sa.Column("run_id", sa.String(128), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("interrupt", sa.Text, nullable=True),
    sa.Column("accepted", sa.Text, nullable=False),
    sa.Column("checkpoint", sa.Text, nullable=False),
    sa.Column("start", sa.Text, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    # When a stop was asked for. Outside the compare-and-set on ``version`` (the web sets
    # it while a worker writes the run), so a worker's write never clears it.
    sa.Column("stop_requested", sa.DateTime(timezone=True), nullable=True),
)
