"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 20:08:37.832539
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_email"), ["email"], unique=True)
        batch_op.create_index(batch_op.f("ix_users_role"), ["role"], unique=False)

    op.create_table(
        "auth_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    with op.batch_alter_table("auth_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_auth_sessions_expires_at"), ["expires_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_auth_sessions_user_id"), ["user_id"], unique=False)

    op.create_table(
        "studies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("permalink_token", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_studies_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_studies_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_studies_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_studies_permalink_token"), ["permalink_token"], unique=True
        )
        batch_op.create_index(batch_op.f("ix_studies_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_studies_updated_at"), ["updated_at"], unique=False)

    op.create_table(
        "export_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("selection", sa.JSON(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("episodes_total", sa.Integer(), nullable=False),
        sa.Column("episodes_done", sa.Integer(), nullable=False),
        sa.Column("steps_done", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("output_path", sa.String(length=500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_export_jobs_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_export_jobs_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_export_jobs_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_export_jobs_study_id"), ["study_id"], unique=False)

    op.create_table(
        "participants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "external_id"),
    )
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_participants_external_id"), ["external_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_participants_study_id"), ["study_id"], unique=False)

    op.create_table(
        "study_environments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("env_key", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("source_kind", sa.String(length=16), nullable=False),
        sa.Column("source_ref", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=8), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "env_key"),
    )
    with op.batch_alter_table("study_environments", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_study_environments_env_key"), ["env_key"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_study_environments_source_kind"), ["source_kind"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_study_environments_source_ref"), ["source_ref"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_study_environments_study_id"), ["study_id"], unique=False
        )

    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_sessions_participant_id"), ["participant_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_sessions_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_study_id"), ["study_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_user_id"), ["user_id"], unique=False)

    op.create_table(
        "episodes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("study_env_id", sa.Integer(), nullable=False),
        sa.Column("env_key", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=True),
        sa.Column("participant_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("end_reason", sa.String(length=32), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("total_reward", sa.Float(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("storage_path", sa.String(length=500), nullable=False),
        sa.Column("latency_p50_ms", sa.Float(), nullable=True),
        sa.Column("latency_p95_ms", sa.Float(), nullable=True),
        sa.Column("frames_dropped", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(
            ["study_env_id"],
            ["study_environments.id"],
        ),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_episodes_ended_at"), ["ended_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_episodes_env_key"), ["env_key"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_episodes_participant_id"), ["participant_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_episodes_session_id"), ["session_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_episodes_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_episodes_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_episodes_steps"), ["steps"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_episodes_study_env_id"), ["study_env_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_episodes_study_id"), ["study_id"], unique=False)
        batch_op.create_index(
            "ix_episodes_study_status_env", ["study_id", "status", "env_key"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_episodes_total_reward"), ["total_reward"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_episodes_user_id"), ["user_id"], unique=False)

    op.create_table(
        "episode_tags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("episode_id", "name"),
    )
    with op.batch_alter_table("episode_tags", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_episode_tags_episode_id"), ["episode_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_episode_tags_name"), ["name"], unique=False)

    op.create_table(
        "notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notes_episode_id"), ["episode_id"], unique=False)

    op.create_table(
        "step_tags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("start_step", sa.Integer(), nullable=False),
        sa.Column("end_step", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["episode_id"], ["episodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("step_tags", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_step_tags_episode_id"), ["episode_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_step_tags_name"), ["name"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("step_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_step_tags_name"))
        batch_op.drop_index(batch_op.f("ix_step_tags_episode_id"))

    op.drop_table("step_tags")
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notes_episode_id"))

    op.drop_table("notes")
    with op.batch_alter_table("episode_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episode_tags_name"))
        batch_op.drop_index(batch_op.f("ix_episode_tags_episode_id"))

    op.drop_table("episode_tags")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episodes_user_id"))
        batch_op.drop_index(batch_op.f("ix_episodes_total_reward"))
        batch_op.drop_index("ix_episodes_study_status_env")
        batch_op.drop_index(batch_op.f("ix_episodes_study_id"))
        batch_op.drop_index(batch_op.f("ix_episodes_study_env_id"))
        batch_op.drop_index(batch_op.f("ix_episodes_steps"))
        batch_op.drop_index(batch_op.f("ix_episodes_status"))
        batch_op.drop_index(batch_op.f("ix_episodes_started_at"))
        batch_op.drop_index(batch_op.f("ix_episodes_session_id"))
        batch_op.drop_index(batch_op.f("ix_episodes_participant_id"))
        batch_op.drop_index(batch_op.f("ix_episodes_env_key"))
        batch_op.drop_index(batch_op.f("ix_episodes_ended_at"))

    op.drop_table("episodes")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_user_id"))
        batch_op.drop_index(batch_op.f("ix_sessions_study_id"))
        batch_op.drop_index(batch_op.f("ix_sessions_started_at"))
        batch_op.drop_index(batch_op.f("ix_sessions_participant_id"))

    op.drop_table("sessions")
    with op.batch_alter_table("study_environments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_environments_study_id"))
        batch_op.drop_index(batch_op.f("ix_study_environments_source_ref"))
        batch_op.drop_index(batch_op.f("ix_study_environments_source_kind"))
        batch_op.drop_index(batch_op.f("ix_study_environments_env_key"))

    op.drop_table("study_environments")
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_participants_study_id"))
        batch_op.drop_index(batch_op.f("ix_participants_external_id"))

    op.drop_table("participants")
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_export_jobs_study_id"))
        batch_op.drop_index(batch_op.f("ix_export_jobs_state"))
        batch_op.drop_index(batch_op.f("ix_export_jobs_owner_id"))
        batch_op.drop_index(batch_op.f("ix_export_jobs_created_at"))

    op.drop_table("export_jobs")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_studies_updated_at"))
        batch_op.drop_index(batch_op.f("ix_studies_state"))
        batch_op.drop_index(batch_op.f("ix_studies_permalink_token"))
        batch_op.drop_index(batch_op.f("ix_studies_owner_id"))
        batch_op.drop_index(batch_op.f("ix_studies_name"))
        batch_op.drop_index(batch_op.f("ix_studies_created_at"))

    op.drop_table("studies")
    with op.batch_alter_table("auth_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_sessions_user_id"))
        batch_op.drop_index(batch_op.f("ix_auth_sessions_expires_at"))

    op.drop_table("auth_sessions")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_role"))
        batch_op.drop_index(batch_op.f("ix_users_email"))

    op.drop_table("users")
