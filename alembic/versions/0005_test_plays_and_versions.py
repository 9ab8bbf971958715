"""episodes.is_test (designers' test plays, backfilled from user_id) and
studies.parent_study_id (a study saved as a new version of another)

Revision ID: 0005
Revises: 0008 (0004 in the branch; chained after main's 0008 at the merge)
Create Date: 2026-11-23 06:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AUTOINCREMENT = {"sqlite_autoincrement": True}


def upgrade() -> None:
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("is_test", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.create_index(batch_op.f("ix_episodes_is_test"), ["is_test"], unique=False)
    # A designer's test play is an episode played by a logged-in user (not a participant).
    op.execute(
        sa.text("UPDATE episodes SET is_test = :yes WHERE user_id IS NOT NULL").bindparams(yes=True)
    )
    # SQLite recreates the table: it keeps AUTOINCREMENT (ids are never reused, see 0002)
    with op.batch_alter_table("studies", table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.add_column(sa.Column("parent_study_id", sa.Integer(), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_studies_parent_study_id"), ["parent_study_id"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_studies_parent_study_id_studies"),
            "studies",
            ["parent_study_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("studies", table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_studies_parent_study_id_studies"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_studies_parent_study_id"))
        batch_op.drop_column("parent_study_id")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episodes_is_test"))
        batch_op.drop_column("is_test")
