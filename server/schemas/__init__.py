"""Request and response bodies: a Create / Update / Public family per entity, one module per
area (users, studies, episodes, bulk, exports, crowd; what they share in ``base``)."""

from server.core.passwords import MIN_LENGTH as MIN_PASSWORD_LENGTH
from server.models import MAX_DB_INT, EpisodeStatus, JobState, Role, StudyState
from server.schemas.base import ErrorOut, HealthOut
from server.schemas.bulk import (
    MAX_BULK_IDS,
    MAX_BULK_TAGS,
    BulkJobPublic,
    BulkSelection,
    EpisodeBulkIn,
    EpisodeBulkOut,
)
from server.schemas.crowd import (
    JOIN_PARAMS,
    ConsentIn,
    JoinIn,
    ParticipantRow,
    PhoneCodeIn,
    PhoneTicketOut,
    PlayerStudyOut,
    PreviewAsIn,
    PreviewIn,
    PreviewOut,
)
from server.schemas.episodes import (
    EpisodeDetail,
    EpisodeFilterIn,
    EpisodeList,
    EpisodeReviewIn,
    EpisodeSummary,
    NoteIn,
    NotePublic,
    OutcomeFilter,
    QualityBadge,
    StepTagIn,
    StepTagPublic,
    TagIn,
)
from server.schemas.exports import (
    ExportCreate,
    ExportJobPublic,
    ExportOptionsIn,
    ExportPreviewIn,
    ExportPreviewPublic,
    ExportSelection,
    LeftOut,
    SpacesPreview,
)
from server.schemas.studies import (
    CatalogEntryPublic,
    EnvValidationPublic,
    PolicyPublic,
    StudyCreate,
    StudyEnvironmentPublic,
    StudyPublic,
    StudyRef,
    StudyStateChange,
    StudySummary,
    StudyUpdate,
    StudyValidationPublic,
    ValidationIssue,
)
from server.schemas.users import (
    PASSWORD_RULE,
    LoginIn,
    LoginLimitPublic,
    LoginOut,
    UserCreate,
    UserPublic,
    UserUpdate,
)
from server.study_spec import StrictModel, StudySpec

__all__ = [
    # users and auth
    "PASSWORD_RULE",
    "LoginIn",
    "LoginLimitPublic",
    "LoginOut",
    "UserCreate",
    "UserPublic",
    "UserUpdate",
    # studies and the study editor
    "CatalogEntryPublic",
    "EnvValidationPublic",
    "PolicyPublic",
    "StudyCreate",
    "StudyEnvironmentPublic",
    "StudyPublic",
    "StudyRef",
    "StudyStateChange",
    "StudySummary",
    "StudyUpdate",
    "StudyValidationPublic",
    "ValidationIssue",
    "ErrorOut",
    "HealthOut",
    # episodes and their review
    "EpisodeDetail",
    "EpisodeFilterIn",
    "EpisodeList",
    "EpisodeReviewIn",
    "EpisodeSummary",
    "NoteIn",
    "NotePublic",
    "OutcomeFilter",
    "QualityBadge",
    "StepTagIn",
    "StepTagPublic",
    "TagIn",
    # bulk actions
    "MAX_BULK_IDS",
    "MAX_BULK_TAGS",
    "BulkJobPublic",
    "BulkSelection",
    "EpisodeBulkIn",
    "EpisodeBulkOut",
    # export jobs
    "ExportCreate",
    "ExportJobPublic",
    "ExportOptionsIn",
    "ExportPreviewIn",
    "ExportPreviewPublic",
    "ExportSelection",
    "LeftOut",
    "SpacesPreview",
    # participants and the player
    "JOIN_PARAMS",
    "ConsentIn",
    "JoinIn",
    "ParticipantRow",
    "PhoneCodeIn",
    "PhoneTicketOut",
    "PlayerStudyOut",
    "PreviewAsIn",
    "PreviewIn",
    "PreviewOut",
    # names the single module imported (importable from it, so kept)
    "MAX_DB_INT",
    "MIN_PASSWORD_LENGTH",
    "EpisodeStatus",
    "JobState",
    "Role",
    "StudyState",
    "StrictModel",
    "StudySpec",
]
