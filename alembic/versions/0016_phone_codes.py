"""phone_codes, phone_code_failures: phone pairing codes and wrong guesses, shared by every
replica (a phone's code and its socket may reach any replica)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 01:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "phone_codes",
        sa.Column("code", sa.String(length=8), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("replica_id", sa.String(length=128), nullable=False),
        sa.Column("ticket", sa.String(length=400), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("code"),
    )
    with op.batch_alter_table("phone_codes", schema=None) as batch_op:
        for column in ("session_id", "expires_at"):
            batch_op.create_index(batch_op.f(f"ix_phone_codes_{column}"), [column])
    op.create_table(
        "phone_code_failures",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        # ids are never reused (see 0002)
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("phone_code_failures", schema=None) as batch_op:
        batch_op.create_index("ix_phone_code_failures_address_at", ["address", "at"])
        batch_op.create_index(batch_op.f("ix_phone_code_failures_at"), ["at"])


def downgrade() -> None:
    with op.batch_alter_table("phone_code_failures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_phone_code_failures_at"))
        batch_op.drop_index("ix_phone_code_failures_address_at")
    op.drop_table("phone_code_failures")
    with op.batch_alter_table("phone_codes", schema=None) as batch_op:
        for column in ("expires_at", "session_id"):
            batch_op.drop_index(batch_op.f(f"ix_phone_codes_{column}"))
    op.drop_table("phone_codes")
