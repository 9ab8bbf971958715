"""crowd: participants' platform, platform ids and consent / completion stamps

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STAMPS = ("consented_at", "screened_out_at", "last_seen_at", "completion_shown_at")


def upgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("platform", sa.String(length=16), server_default="direct", nullable=False)
        )
        batch_op.add_column(sa.Column("platform_study_id", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("platform_session_id", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("submit_to", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("assigned_env", sa.String(length=64), nullable=True))
        for name in STAMPS:
            batch_op.add_column(sa.Column(name, sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_participants_platform"), ["platform"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_participants_platform"))
        for name in reversed(STAMPS):
            batch_op.drop_column(name)
        batch_op.drop_column("assigned_env")
        batch_op.drop_column("submit_to")
        batch_op.drop_column("platform_session_id")
        batch_op.drop_column("platform_study_id")
        batch_op.drop_column("platform")
