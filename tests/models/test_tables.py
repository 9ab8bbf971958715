"""Importing the models package registers every table (Alembic's ``env.py`` relies on it)."""

from __future__ import annotations


def test_every_table_is_registered_by_importing_the_models_package():
    import server.models  # noqa: F401  (the import is what is tested)
    from server.core.db import Base

    assert sorted(Base.metadata.tables) == [
        "auth_sessions", "bulk_jobs", "dataset_edits", "datasets", "episode_deletions",
        "episode_tags", "episodes", "export_jobs", "feedback_items", "judgements",
        "live_sessions", "login_failures",
        "narrations", "notes", "participants", "phone_code_failures", "phone_codes",
        "replay_checks", "replicas", "session_leases", "sessions", "step_tags", "studies",
        "study_environments", "users",
    ]  # fmt: skip
