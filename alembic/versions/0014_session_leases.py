"""session_leases: one live play session per participant across every replica

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 19:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_leases",
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("replica_id", sa.String(length=128), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("participant_id"),
    )
    with op.batch_alter_table("session_leases", schema=None) as batch_op:
        for column in ("session_id", "replica_id"):
            batch_op.create_index(batch_op.f(f"ix_session_leases_{column}"), [column])


def downgrade() -> None:
    with op.batch_alter_table("session_leases", schema=None) as batch_op:
        for column in ("replica_id", "session_id"):
            batch_op.drop_index(batch_op.f(f"ix_session_leases_{column}"))
    op.drop_table("session_leases")
