"""participants.is_test: the test participants a designer's "preview as a participant" makes

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a plain ADD COLUMN (SQLite takes NOT NULL with a default): a batch would copy the table
    # and drop its AUTOINCREMENT, so ids could be reused (0002)
    op.add_column(
        "participants",
        sa.Column("is_test", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_column("is_test")
