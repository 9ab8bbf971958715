"""Export jobs of a dataset: export_jobs.dataset_id, and study_id nullable (a dataset's
episodes span studies)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-10 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


AUTOINCREMENT = {"sqlite_autoincrement": True}


def upgrade() -> None:
    # SQLite recreates the table: it keeps AUTOINCREMENT (ids are never reused, see 0002)
    with op.batch_alter_table("export_jobs", table_kwargs=AUTOINCREMENT) as batch:
        batch.add_column(sa.Column("dataset_id", sa.Integer(), nullable=True))
        batch.alter_column("study_id", existing_type=sa.Integer(), nullable=True)
        batch.create_foreign_key(
            "fk_export_jobs_dataset_id_datasets",
            "datasets",
            ["dataset_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_index("ix_export_jobs_dataset_id", ["dataset_id"])


def downgrade() -> None:
    op.execute("DELETE FROM export_jobs WHERE dataset_id IS NOT NULL")
    with op.batch_alter_table("export_jobs", table_kwargs=AUTOINCREMENT) as batch:
        batch.drop_index("ix_export_jobs_dataset_id")
        batch.drop_constraint("fk_export_jobs_dataset_id_datasets", type_="foreignkey")
        batch.drop_column("dataset_id")
        batch.alter_column("study_id", existing_type=sa.Integer(), nullable=False)
