"""Tables, one module per area. Everything a designer filters on is a real, indexed column.

Schemas (Create / Update / Public) live in ``server/schemas/``; these are rows only. Every
table is imported here, so importing ``server.models`` registers them all on ``Base.metadata``
(Alembic's ``env.py`` relies on it).
"""

from server.models.base import MAX_DB_INT, is_row_id, utcnow
from server.models.datasets import Dataset, DatasetEdit
from server.models.episodes import (
    EndedBy,
    Episode,
    EpisodeDeletion,
    EpisodeStatus,
    EpisodeTag,
    Narration,
    Note,
    Outcome,
    ReplayVerdict,
    StepTag,
    ended_by,
)
from server.models.feedback import FeedbackItem, Judgement
from server.models.jobs import BulkJob, ExportJob, JobState, ReplayCheck
from server.models.participants import Participant, Platform, PlaySession, ScreenoutReason
from server.models.phone import PhoneCode, PhoneCodeFailure
from server.models.replicas import LiveSessionRow, Replica, SessionLease
from server.models.studies import Study, StudyEnvironment, StudyState
from server.models.users import AuthSession, LoginFailure, Role, User

__all__ = [
    "MAX_DB_INT",
    "AuthSession",
    "BulkJob",
    "Dataset",
    "DatasetEdit",
    "EndedBy",
    "Episode",
    "EpisodeDeletion",
    "EpisodeStatus",
    "EpisodeTag",
    "ExportJob",
    "FeedbackItem",
    "JobState",
    "Judgement",
    "LiveSessionRow",
    "LoginFailure",
    "Narration",
    "Note",
    "Outcome",
    "Participant",
    "PhoneCode",
    "PhoneCodeFailure",
    "Platform",
    "PlaySession",
    "ReplayCheck",
    "ReplayVerdict",
    "Replica",
    "Role",
    "ScreenoutReason",
    "SessionLease",
    "StepTag",
    "Study",
    "StudyEnvironment",
    "StudyState",
    "User",
    "ended_by",
    "is_row_id",
    "utcnow",
]
