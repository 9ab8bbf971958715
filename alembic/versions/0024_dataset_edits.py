"""Dataset edits: trims, relabels and exclusions of a dataset's episodes (never a recorded
value), at most one of a kind per episode (and one relabel per task)

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-11 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dataset_edits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=True),
        sa.Column("task_key", sa.String(length=64), nullable=True),
        sa.Column("trim_start", sa.Integer(), nullable=False),
        sa.Column("trim_end", sa.Integer(), nullable=False),
        sa.Column("instruction", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_id", "kind", "episode_id", name="uq_dataset_edits_episode"),
        sa.UniqueConstraint("dataset_id", "kind", "task_key", name="uq_dataset_edits_task"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_dataset_edits_dataset_id", "dataset_edits", ["dataset_id"])


def downgrade() -> None:
    op.drop_index("ix_dataset_edits_dataset_id", table_name="dataset_edits")
    op.drop_table("dataset_edits")
