"""replicas, live_sessions and episodes.replica_id: app processes sharing one database

Revision ID: 0007
Revises: 0009
Create Date: 2026-11-23 06:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("replicas", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_replicas_heartbeat_at"), ["heartbeat_at"])
    op.create_table(
        "live_sessions",
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("replica_id", sa.String(length=128), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("env_key", sa.String(length=64), nullable=True),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("has_worker", sa.Boolean(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("fps", sa.Float(), nullable=True),
        sa.Column("latency_p50_ms", sa.Float(), nullable=True),
        sa.Column("frames_dropped", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["replica_id"], ["replicas.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_id"),
    )
    with op.batch_alter_table("live_sessions", schema=None) as batch_op:
        for column in ("replica_id", "study_id"):
            batch_op.create_index(batch_op.f(f"ix_live_sessions_{column}"), [column])
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("replica_id", sa.String(length=128), nullable=True))
        batch_op.create_index(batch_op.f("ix_episodes_replica_id"), ["replica_id"])


def downgrade() -> None:
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episodes_replica_id"))
        batch_op.drop_column("replica_id")
    with op.batch_alter_table("live_sessions", schema=None) as batch_op:
        for column in ("study_id", "replica_id"):
            batch_op.drop_index(batch_op.f(f"ix_live_sessions_{column}"))
    op.drop_table("live_sessions")
    with op.batch_alter_table("replicas", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_replicas_heartbeat_at"))
    op.drop_table("replicas")
