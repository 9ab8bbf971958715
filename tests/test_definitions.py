"""The definition packages (models, schemas, the study format) export what their single
modules did before they were split by area: ``from server.models import X`` keeps working.

The names are those the old modules defined (and the project names they imported, which
were importable from them too); the modules' own imports of the standard library, pydantic
and SQLAlchemy are not part of what they offer.
"""

from __future__ import annotations

import importlib

import pytest

MODELS = {
    "MAX_DB_INT", "NO_ID_REUSE", "is_row_id", "utcnow", "new_uuid", "Role", "Platform",
    "ScreenoutReason", "StudyState", "EpisodeStatus", "Outcome", "JobState", "UTCDateTime", "User",
    "AuthSession",
    "Study", "StudyEnvironment", "Participant", "PlaySession", "Episode", "EpisodeTag",
    "StepTag", "Note", "EpisodeDeletion", "LoginFailure", "ClaimableJob", "ExportJob",
    "Replica", "LiveSessionRow", "SessionLease", "BulkJob", "PhoneCode", "PhoneCodeFailure",
    "Base",  # imported from server.core.db
}  # fmt: skip

SCHEMAS = {
    "PASSWORD_RULE", "LoginIn", "LoginLimitPublic", "UserCreate", "UserUpdate", "UserPublic",
    "LoginOut", "StudyCreate", "StudyUpdate", "StudyStateChange", "StudyEnvironmentPublic",
    "StudyRef", "StudySummary", "StudyPublic", "HealthOut", "ErrorOut", "TagIn", "StepTagIn",
    "NoteIn", "StepTagPublic", "NotePublic", "QualityBadge", "EpisodeSummary",
    "EpisodeReviewIn", "OutcomeFilter", "EpisodeDetail", "EpisodeList", "MAX_BULK_IDS",
    "MAX_BULK_TAGS", "EpisodeFilterIn", "BulkSelection", "EpisodeBulkIn", "EpisodeBulkOut",
    "BulkJobPublic", "ExportSelection", "ExportOptionsIn", "ExportCreate", "ExportPreviewIn",
    "SpacesPreview", "LeftOut", "ExportPreviewPublic", "ExportJobPublic", "PreviewIn",
    "JOIN_PARAMS", "JoinIn", "PreviewAsIn", "ConsentIn", "PlayerStudyOut",
    "CatalogEntryPublic", "PolicyPublic", "ValidationIssue", "EnvValidationPublic",
    "StudyValidationPublic",
    "PreviewOut", "ParticipantRow", "PhoneCodeIn", "PhoneTicketOut",
    # imported from server.core.passwords, server.models and server.study_spec
    "MIN_PASSWORD_LENGTH", "MAX_DB_INT", "EpisodeStatus", "JobState", "Role", "StudyState",
    "StrictModel", "StudySpec",
}  # fmt: skip

STUDY_SPEC = {
    "SLUG", "MAX_SEED", "MAX_KWARGS_DEPTH", "MAX_KWARGS_BYTES", "ActionValue",
    "CONTROL_CHARACTER", "char_name", "Loc", "bad_char_path", "nul_path",
    "control_char_problem", "json_data_problem", "reject_nul", "reject_control_chars",
    "StrictModel", "KWARGS_DESCRIPTION", "GymnasiumSource", "DmEnvSource", "Source",
    "AxisBinding", "Controls", "EnvironmentSpec", "CODE", "check_url", "Requirements", "Input",
    "MAX_TOUCH_BUTTONS", "CrowdSettings", "StudySpec", "PolicySpec", "Takeover",
}  # fmt: skip

EXPORTS = {"server.models": MODELS, "server.schemas": SCHEMAS, "server.study_spec": STUDY_SPEC}


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_a_split_package_exports_every_name_of_its_old_module(package):
    module = importlib.import_module(package)
    assert set(module.__all__) == EXPORTS[package]
    missing = [name for name in EXPORTS[package] if not hasattr(module, name)]
    assert missing == []


def test_every_table_is_registered_by_importing_the_models_package():
    from server.core.db import Base
    from server.models import Base as models_base

    assert models_base is Base
    assert sorted(Base.metadata.tables) == [
        "auth_sessions", "bulk_jobs", "episode_deletions", "episode_tags", "episodes",
        "export_jobs", "live_sessions", "login_failures", "notes", "participants",
        "phone_code_failures", "phone_codes", "replicas", "session_leases", "sessions",
        "step_tags", "studies", "study_environments", "users",
    ]  # fmt: skip
