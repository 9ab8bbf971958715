"""shared autonomy: each episode's takeovers, the share of actions the player drove, and why
its policy stopped

Existing episodes keep NULL (no policy drove them); ``rlds-studio quality`` fills the two
signals of logs that recorded a policy.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 22:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("interventions", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("intervention_share", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("policy_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_column("policy_error")
        batch_op.drop_column("intervention_share")
        batch_op.drop_column("interventions")
