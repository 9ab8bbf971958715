"""outcome labels (player's and reviewer's), the excluded mark, bulk_jobs

Revision ID: 0006
Revises: 0008
Create Date: 2026-11-23 06:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("player_outcome", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("outcome", sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column("excluded", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.create_index(batch_op.f("ix_episodes_excluded"), ["excluded"])
    op.create_table(
        "bulk_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("skipped_recording", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        # claimed through the database like export_jobs (0009; server/queue/job_queue.py)
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        # ids are never reused (see 0002)
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("bulk_jobs", schema=None) as batch_op:
        for column in ("study_id", "owner_id", "state", "created_at", "claimed_by"):
            batch_op.create_index(batch_op.f(f"ix_bulk_jobs_{column}"), [column])


def downgrade() -> None:
    with op.batch_alter_table("bulk_jobs", schema=None) as batch_op:
        for column in ("claimed_by", "created_at", "state", "owner_id", "study_id"):
            batch_op.drop_index(batch_op.f(f"ix_bulk_jobs_{column}"))
    op.drop_table("bulk_jobs")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episodes_excluded"))
        batch_op.drop_column("excluded")
        batch_op.drop_column("outcome")
        batch_op.drop_column("player_outcome")
