"""participants.screenout_reason: why a participant was screened out (declined the consent,
or left at the device check before seeing it)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a plain ADD COLUMN: a batch would copy the table and drop its AUTOINCREMENT (0002);
    # rows screened out before it stay null, which the participants page shows as declined
    op.add_column("participants", sa.Column("screenout_reason", sa.String(length=16)))


def downgrade() -> None:
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_column("screenout_reason")
