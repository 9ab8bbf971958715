"""Language-conditioned data: each episode's task and instruction (episodes.task_key,
episodes.instruction) and narrations of step ranges (narrations)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 17:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMNs (a batch would copy the table and drop its AUTOINCREMENT, 0002)
    op.add_column("episodes", sa.Column("task_key", sa.String(length=64)))
    op.add_column("episodes", sa.Column("instruction", sa.Text()))
    op.create_index("ix_episodes_study_task", "episodes", ["study_id", "task_key"])
    op.create_table(
        "narrations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("start_step", sa.Integer(), nullable=False),
        sa.Column("end_step", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("author_id", sa.Integer()),
        sa.Column("participant_id", sa.Integer()),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_narrations_episode_start", "narrations", ["episode_id", "start_step"])


def downgrade() -> None:
    op.drop_table("narrations")
    op.drop_index("ix_episodes_study_task", table_name="episodes")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_column("instruction")
        batch_op.drop_column("task_key")
