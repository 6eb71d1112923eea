"""Index threads by owner, for a person's thread list.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_threads_owner", "threads", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_threads_owner", table_name="threads")
