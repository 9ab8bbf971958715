"""Who ended each episode (episodes.ended_by: environment, time_limit, participant, canceled,
abandoned, failed) and what its environment reported of success (episodes.env_outcome)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 16:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# end_reason -> ended_by as server/models/episodes.py maps them at this revision (a
# migration keeps its own copy: the model's may grow)
_ENDED_BY = {
    "terminated": "environment", "truncated": "time_limit", "max_steps": "time_limit",
    "max_duration": "time_limit", "participant": "participant", "canceled": "canceled",
    "failed": "failed", "env_failed": "failed",
}  # fmt: skip


def upgrade() -> None:
    # plain ADD COLUMNs (a batch would copy the table and drop its AUTOINCREMENT, 0002)
    op.add_column("episodes", sa.Column("ended_by", sa.String(length=16)))
    op.add_column("episodes", sa.Column("env_outcome", sa.String(length=16)))
    op.create_index("ix_episodes_ended_by", "episodes", ["ended_by"])
    episodes = sa.table(
        "episodes", sa.column("end_reason", sa.String), sa.column("ended_by", sa.String)
    )
    known = sa.case(
        *((episodes.c.end_reason == reason, who) for reason, who in _ENDED_BY.items()),
        else_="abandoned",
    )
    op.execute(episodes.update().where(episodes.c.end_reason.is_not(None)).values(ended_by=known))


def downgrade() -> None:
    op.drop_index("ix_episodes_ended_by", table_name="episodes")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_column("env_outcome")
        batch_op.drop_column("ended_by")
