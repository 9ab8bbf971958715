"""episode_deletions: who deleted how many episodes of which study, and when

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 04:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "episode_deletions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        # ids are never reused (see 0002)
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("episode_deletions", schema=None) as batch_op:
        for column in ("study_id", "user_id", "deleted_at"):
            batch_op.create_index(batch_op.f(f"ix_episode_deletions_{column}"), [column])


def downgrade() -> None:
    with op.batch_alter_table("episode_deletions", schema=None) as batch_op:
        for column in ("deleted_at", "user_id", "study_id"):
            batch_op.drop_index(batch_op.f(f"ix_episode_deletions_{column}"))
    op.drop_table("episode_deletions")
