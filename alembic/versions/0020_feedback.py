"""Feedback studies: the items participants judge (feedback_items) and their judgements

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 21:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "feedback_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("question_key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("episode_a", sa.String(length=32), nullable=False),
        sa.Column("a_start", sa.Integer(), nullable=False),
        sa.Column("a_end", sa.Integer(), nullable=False),
        sa.Column("episode_b", sa.String(length=32)),
        sa.Column("b_start", sa.Integer()),
        sa.Column("b_end", sa.Integer()),
        sa.Column("is_gold", sa.Boolean(), nullable=False),
        sa.Column("gold_answer", sa.String(length=16)),
        sa.Column("gold_min", sa.Float()),
        sa.Column("gold_max", sa.Float()),
        sa.Column("gone", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "signature"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_feedback_items_study_question", "feedback_items", ["study_id", "question_key"]
    )
    op.create_index("ix_feedback_items_episode_a", "feedback_items", ["episode_a"])
    op.create_index("ix_feedback_items_episode_b", "feedback_items", ["episode_b"])
    op.create_table(
        "judgements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("swapped", sa.Boolean(), nullable=False),
        sa.Column("assigned_at", TS, nullable=False),
        sa.Column("answered_at", TS),
        sa.Column("choice", sa.String(length=16)),
        sa.Column("rating", sa.Float()),
        sa.Column("text", sa.Text()),
        sa.Column("answer_ms", sa.Integer()),
        sa.Column("correct", sa.Boolean()),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["item_id"], ["feedback_items.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("item_id", "participant_id"),
        sa.UniqueConstraint("token"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_judgements_study_answered", "judgements", ["study_id", "answered_at"])
    op.create_index("ix_judgements_participant_id", "judgements", ["participant_id"])


def downgrade() -> None:
    op.drop_table("judgements")
    op.drop_table("feedback_items")
