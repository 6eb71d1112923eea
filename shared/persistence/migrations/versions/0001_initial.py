"""Threads, messages and runs.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("current_run_id", sa.String(128), nullable=True),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("thread_id", sa.String(128), sa.ForeignKey("threads.id"), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("meta", sa.Text, nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("thread_id", "message_id", name="uq_messages_thread_message"),
    )
    op.create_table(
        "runs",
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
    )


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_table("messages")
    op.drop_table("threads")
