"""Replay verification: each episode's verdict (episodes.replay_*) and the queue of checks
(replay_checks, one row per episode)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 13:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMNs (a batch would copy the table and drop its AUTOINCREMENT, 0002);
    # episodes recorded before are pending: the checker verifies them in the background
    op.add_column(
        "episodes",
        sa.Column("replay_verdict", sa.String(length=16), nullable=False,
                  server_default="pending"),
    )  # fmt: skip
    op.add_column("episodes", sa.Column("replay_step", sa.Integer()))
    op.add_column("episodes", sa.Column("replay_detail", sa.JSON()))
    op.add_column("episodes", sa.Column("replay_checked_at", sa.DateTime(timezone=True)))
    op.add_column("episodes", sa.Column("replay_versions", sa.String(length=300)))
    op.create_index("ix_episodes_study_replay", "episodes", ["study_id", "replay_verdict"])
    op.create_index("ix_episodes_replay_verdict", "episodes", ["replay_verdict"])
    op.create_index("ix_episodes_replay_versions", "episodes", ["replay_versions"])
    op.create_table(
        "replay_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text()),
        sa.Column("retry_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("claimed_by", sa.String(length=128)),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True)),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("episode_id"),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("replay_checks", schema=None) as batch_op:
        for column in ("study_id", "state", "retry_at", "created_at", "claimed_by"):
            batch_op.create_index(f"ix_replay_checks_{column}", [column])


def downgrade() -> None:
    op.drop_table("replay_checks")
    op.drop_index("ix_episodes_replay_versions", table_name="episodes")
    op.drop_index("ix_episodes_study_replay", table_name="episodes")
    op.drop_index("ix_episodes_replay_verdict", table_name="episodes")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        for column in ("replay_versions", "replay_checked_at", "replay_detail", "replay_step",
                       "replay_verdict"):  # fmt: skip
            batch_op.drop_column(column)
