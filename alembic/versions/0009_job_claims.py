"""export_jobs claimed through the database: claimed_by, heartbeat_at, attempts,
cancel_requested (several replicas share one database; docs/deploy.md)

Revision ID: 0009
Revises: 0004
Create Date: 2026-11-23 06:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# SQLite recreates the table in batch mode: keep its AUTOINCREMENT (ids never reused, 0002).
KEEP_IDS = {"sqlite_autoincrement": True}


def upgrade() -> None:
    with op.batch_alter_table("export_jobs", schema=None, table_kwargs=KEEP_IDS) as batch_op:
        batch_op.add_column(sa.Column("claimed_by", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(
            sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.create_index(batch_op.f("ix_export_jobs_claimed_by"), ["claimed_by"])


def downgrade() -> None:
    with op.batch_alter_table("export_jobs", schema=None, table_kwargs=KEEP_IDS) as batch_op:
        batch_op.drop_index(batch_op.f("ix_export_jobs_claimed_by"))
        for column in ("cancel_requested", "attempts", "heartbeat_at", "claimed_by"):
            batch_op.drop_column(column)
