"""ids never reused: SQLite tables with integer ids get AUTOINCREMENT

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28 10:00:00.000000

SQLite hands the largest id out again after that row is deleted, so an old link could open
another study; AUTOINCREMENT stops that, and SQLite can only add it by recreating the table
(rows, indexes and constraints are copied; ``env.py`` turns foreign keys off meanwhile so
that dropping the old table cascades nothing). PostgreSQL sequences never go back: nothing
to do there.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "users",
    "studies",
    "export_jobs",
    "participants",
    "study_environments",
    "episode_tags",
    "notes",
    "step_tags",
)


def _recreate(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in TABLES:
        table_kwargs = {"sqlite_autoincrement": True} if autoincrement else {}
        with op.batch_alter_table(name, recreate="always", table_kwargs=table_kwargs):
            pass


def upgrade() -> None:
    _recreate(autoincrement=True)


def downgrade() -> None:
    _recreate(autoincrement=False)
