"""participants.browser_key_hash: codes are shown only to the browser that holds the key

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 14:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("browser_key_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_column("browser_key_hash")
