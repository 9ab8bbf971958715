"""Participants: who arrives through a permalink (platform, ids) and the designer's list."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from server.errors import Conflict, Invalid
from server.models import (
    Episode,
    EpisodeStatus,
    Participant,
    Platform,
    ReplayVerdict,
    Study,
    utcnow,
)
from server.principal import is_reserved_participant_id
from server.services.feedback import summary
from server.services.review.counts import REAL_PARTICIPANT
from server.study_spec import CrowdSettings, StudySpec

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"  # MTurk's assignmentId while a HIT is previewed
MAX_ID = 200
# the origins MTurk hands in turkSubmitTo (see form-action in server/core/headers.py)
MTURK_SUBMIT = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def _invalid(field: str, message: str) -> Invalid:
    return Invalid(message, detail=[{"loc": ["body", *field.split(".")], "msg": message}])


def clean_id(value: str, field: str) -> str:
    """An id as stored: surrounding spaces trimmed, 1-200 characters, no whitespace or
    control characters inside, not in the designers' ``user:`` namespace.

    Markup and other scripts are stored as they are (pages show them escaped).
    """
    value = value.strip()
    if not value:
        raise _invalid(field, "The id is empty.")
    if len(value) > MAX_ID:
        raise _invalid(field, f"The id is too long ({len(value)} characters; at most {MAX_ID}).")
    for ch in value:
        if ch.isspace() or unicodedata.category(ch)[0] == "C":
            raise _invalid(field, "The id cannot contain spaces or control characters.")
    if is_reserved_participant_id(value):
        raise _invalid(
            field, "Participant ids starting with 'user:' are reserved for designers' test plays."
        )
    return value


def clean_submit_to(value: str) -> str:
    """MTurk's ``turkSubmitTo``: MTurk's own submit address (the live site or its sandbox,
    the only form targets the pages' CSP allows), else 422."""
    parts = urlsplit(value.strip())
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin not in MTURK_SUBMIT or parts.query or parts.fragment:
        raise _invalid("params.turkSubmitTo", "turkSubmitTo must be MTurk's submit address.")
    return origin


@dataclass(frozen=True)
class Arrival:
    """Who is joining, as the permalink's URL parameters and the typed id say."""

    platform: Platform
    external_id: str
    platform_study_id: str | None = None
    platform_session_id: str | None = None
    submit_to: str | None = None


def _param(params: dict[str, str], name: str) -> str | None:
    value = params.get(name)
    return clean_id(value, f"params.{name}") if value else None


def arrival(params: dict[str, str], typed: str | None, crowd: CrowdSettings) -> Arrival:
    """The platform and ids: Prolific, MTurk (its preview is a 409 ``preview``), a typed id,
    or anonymous when the study allows it."""
    if params.get("PROLIFIC_PID"):
        return Arrival(
            Platform.prolific, clean_id(params["PROLIFIC_PID"], "params.PROLIFIC_PID"),
            _param(params, "STUDY_ID"), _param(params, "SESSION_ID"),
        )  # fmt: skip
    if params.get("assignmentId") == MTURK_PREVIEW:
        raise Conflict("This is a preview: accept the HIT to start the study.", code="preview")
    if params.get("workerId"):
        submit = params.get("turkSubmitTo")
        return Arrival(
            Platform.mturk, clean_id(params["workerId"], "params.workerId"),
            _param(params, "hitId"), _param(params, "assignmentId"),
            clean_submit_to(submit) if submit else None,
        )  # fmt: skip
    if typed:
        return Arrival(Platform.direct, clean_id(typed, "participant_id"))
    if crowd.allow_anonymous:
        return Arrival(Platform.anonymous, f"anon-{secrets.token_hex(12)}")
    raise _invalid("participant_id", "Please enter your participant id.")


TEST_PREFIX = "TEST-"  # a test participant's external id starts with it
TAKEN = {
    False: "This participant id is taken in this study: check the id you were given.",
    True: "A participant of this study already has this id: type another one.",
}


def preview_arrival(platform: str, typed: str | None, crowd: CrowdSettings) -> Arrival:
    """A designer previewing the study as a participant arriving from ``platform``
    (``prolific``, ``mturk`` or ``direct`` with the id they typed): made-up ``TEST-`` ids the
    way that platform hands them over (MTurk's sandbox as where a HIT is submitted)."""
    tag = secrets.token_hex(4).upper()
    params: dict[str, str] = {}
    if platform == "prolific":
        params = {"PROLIFIC_PID": f"{TEST_PREFIX}{tag}", "STUDY_ID": "TEST-STUDY",
                  "SESSION_ID": f"TEST-SESSION-{tag}"}  # fmt: skip
    elif platform == "mturk":
        params = {"workerId": f"{TEST_PREFIX}{tag}", "assignmentId": f"TEST-ASSIGNMENT-{tag}",
                  "hitId": "TEST-HIT", "turkSubmitTo": MTURK_SUBMIT[1]}  # fmt: skip
    who = arrival(params, typed if platform == "direct" else None, crowd)
    if who.external_id.startswith(TEST_PREFIX):
        return who
    return replace(who, external_id=(TEST_PREFIX + who.external_id)[:MAX_ID])


def find(db: Session, study_id: int, external_id: str) -> Participant | None:
    """The participant with this external id in this study."""
    return db.scalar(
        select(Participant).where(
            Participant.study_id == study_id, Participant.external_id == external_id
        )
    )


def find_or_insert(
    db: Session, study_id: int, external_id: str, platform: str, test: bool = False
) -> Participant:
    """The participant with this external id, inserted first if missing (committed).

    Idempotent under concurrency: the insert is ``ON CONFLICT DO NOTHING`` on the unique
    (study, external id), so simultaneous joins of one participant (a double click, two tabs,
    a retry) make one row and none of them fails on the constraint (PostgreSQL waits for the
    first insert's commit; SQLite serializes writers).
    """
    found = find(db, study_id, external_id)
    if found is not None:
        return found
    dialect = db.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    values = {"study_id": study_id, "external_id": external_id, "platform": platform,
              "created_at": utcnow(), "is_test": test}  # fmt: skip
    db.execute(
        insert(Participant)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["study_id", "external_id"])
    )
    db.commit()
    participant = find(db, study_id, external_id)
    assert participant is not None  # inserted now or by the concurrent join that won
    return participant


def join(db: Session, study: Study, who: Arrival, test: bool = False) -> Participant:
    """Create the participant, or note a returning one's latest platform ids. ``test``: a
    designer's preview as a participant (a test participant); neither kind enters the other."""
    participant = find_or_insert(db, study.id, who.external_id, who.platform, test)
    if participant.is_test != test:
        raise Conflict(TAKEN[test])
    if participant.platform == who.platform:
        # a returning MTurk worker may hold a new assignment: its ids are the ones to submit
        for name in ("platform_study_id", "platform_session_id", "submit_to"):
            value = getattr(who, name)
            if value:
                setattr(participant, name, value)
    participant.last_seen_at = utcnow()
    db.commit()
    return participant


# -- the browser key: a participant's codes go only to the browser holding it ----------------
def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def holds_key(participant: Participant, key: str | None) -> bool:
    """True when ``key`` is the participant's browser key (knowing the id is not enough)."""
    stored = participant.browser_key_hash
    if not key or stored is None or len(key) > 200:
        return False
    return hmac.compare_digest(_digest(key), stored)


def new_key(db: Session, participant: Participant, replace: bool = False) -> str | None:
    """A browser key for this browser, committed; with ``replace=False`` only when the
    participant has none yet (of simultaneous first joins one gets it, the others None)."""
    key = secrets.token_urlsafe(24)
    query = update(Participant).where(Participant.id == participant.id)
    if not replace:
        query = query.where(Participant.browser_key_hash.is_(None))
    won = db.execute(
        query.values(browser_key_hash=_digest(key)).execution_options(synchronize_session=False)
    )
    db.commit()
    db.refresh(participant)
    return key if getattr(won, "rowcount", 0) == 1 else None


def outcome(participant: Participant) -> str | None:
    """How the participant's study ended: ``completed``, ``full`` (it filled up before they
    finished), ``screened_out`` or None (not yet)."""
    if participant.completed_at is not None:
        return "completed"
    if participant.full_at is not None:
        return "full"
    return "screened_out" if participant.screened_out_at is not None else None


def seen(db: Session, participant: Participant) -> None:
    """Stamp ``last_seen_at``."""
    participant.last_seen_at = utcnow()
    db.commit()


# -- the designer's view ---------------------------------------------------------------------
NO_JUDGEMENT = {"answered": 0, "gold_answered": 0, "gold_correct": 0, "gold_accuracy": None,
               "agreement": None}  # fmt: skip


def study_listing(db: Session, study: Study, spec: StudySpec) -> list[dict[str, Any]]:
    """:func:`listing`, with each judge's record in a feedback study (``judging``)."""
    judged = summary.participant_figures(db, study, spec.judging) if spec.judging else None
    return listing(db, study.id, judged)


def listing(db: Session, study_id: int, judged: dict[int, dict[str, Any]] | None = None
            ) -> list[dict[str, Any]]:  # fmt: skip
    """Every participant of a study with their episodes per status and active play time;
    ``judged`` (a feedback study's records per participant id) fills ``judging``."""
    people = db.scalars(
        select(Participant)
        .where(Participant.study_id == study_id, REAL_PARTICIPANT)  # no previews
        .order_by(Participant.id)
    ).all()
    counts: dict[int, dict[str, int]] = {}
    for pid, status, n in db.execute(
        select(Episode.participant_id, Episode.status, func.count())
        .where(Episode.study_id == study_id, Episode.participant_id.is_not(None))
        .group_by(Episode.participant_id, Episode.status)
    ).all():
        counts.setdefault(int(pid or 0), {})[str(status)] = int(n)
    played = dict(
        db.execute(
            select(Episode.participant_id, func.coalesce(func.sum(Episode.duration_s), 0.0))
            .where(Episode.study_id == study_id, Episode.status == EpisodeStatus.completed)
            .group_by(Episode.participant_id)
        ).all()
    )
    # completed episodes whose replay verified (docs/review.md, "Replay verification"): what
    # a study that pays per verified episode pays for
    verified = dict(
        db.execute(
            select(Episode.participant_id, func.count())
            .where(Episode.study_id == study_id, Episode.status == EpisodeStatus.completed,
                   Episode.replay_verdict == ReplayVerdict.verified)
            .group_by(Episode.participant_id)
        ).all()
    )  # fmt: skip
    by_task: dict[int, dict[str, int]] = {}
    for pid, task, n in db.execute(
        select(Episode.participant_id, Episode.task_key, func.count())
        .where(Episode.study_id == study_id, Episode.status == EpisodeStatus.completed,
               Episode.participant_id.is_not(None), Episode.task_key.is_not(None))
        .group_by(Episode.participant_id, Episode.task_key)
        .order_by(Episode.participant_id, Episode.task_key)
    ).all():  # fmt: skip
        by_task.setdefault(int(pid or 0), {})[str(task)] = int(n)
    errors: dict[int, str] = {}
    for pid, error in db.execute(
        select(Episode.participant_id, Episode.error)
        .where(Episode.study_id == study_id, Episode.status == EpisodeStatus.failed,
               Episode.participant_id.is_not(None))
        .order_by(Episode.started_at)
    ).all():  # fmt: skip
        errors[int(pid or 0)] = error or ""
    return [
        {"id": p.id, "external_id": p.external_id, "platform": p.platform,
         "platform_study_id": p.platform_study_id, "platform_session_id": p.platform_session_id,
         "consented_at": p.consented_at, "screened_out_at": p.screened_out_at,
         "screenout_reason": p.screenout_reason,
         "started_at": p.created_at, "last_seen_at": p.last_seen_at,
         "episodes": counts.get(p.id, {}), "episodes_verified": int(verified.get(p.id) or 0),
         "episodes_by_task": by_task.get(p.id, {}),
         "play_time_s": round(float(played.get(p.id) or 0), 3),
         "completed_at": p.completed_at, "full_at": p.full_at, "outcome": outcome(p),
         "completion_code_shown": p.completion_shown_at is not None,
         "assigned_env": p.assigned_env, "last_error": errors.get(p.id),
         "judging": None if judged is None else judged.get(p.id, NO_JUDGEMENT)}
        for p in people
    ]  # fmt: skip


CSV_COLUMNS = ["external_id", "platform", "platform_study_id", "platform_session_id",
               "consented_at", "screened_out_at", "screenout_reason", "started_at",
               "last_seen_at", "episodes_completed", "episodes_verified", "episodes_total",
               "play_time_s", "outcome", "completed_at", "full_at",
               "completion_code_shown"]  # fmt: skip
PLAY_ONLY = {"episodes_completed", "episodes_verified", "episodes_total", "play_time_s"}
# a feedback study's columns instead of the episodes' (gold_accuracy and agreement: 0 to 1)
JUDGING_COLUMNS = ["judgements_answered", "gold_answered", "gold_correct", "gold_accuracy",
                   "agreement"]  # fmt: skip


def _cell(value: Any) -> str:
    """A CSV cell; text a spreadsheet would run as a formula gets a leading apostrophe."""
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _share(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


TASK_COLUMN = "episodes_completed:"  # + a task id: that task's completed episodes


def task_ids(spec: StudySpec) -> list[str]:
    """The study's task ids across its environments, in its order, each once."""
    return list(dict.fromkeys(t.id for env in spec.environments for t in env.tasks))


def listing_csv(rows: list[dict[str, Any]], tasks: Sequence[str] = (),
                judging: bool = False) -> str:  # fmt: skip
    """The listing as CSV, external id first (fits Prolific / MTurk approval and bonus uploads),
    then one ``episodes_completed:<task id>`` column per task: ``tasks`` (the study's, in its
    order), then any other task a row counts, sorted. ``judging`` (a feedback study): the
    judging columns instead of the episodes'."""
    drawn = sorted({t for row in rows for t in row["episodes_by_task"]} - set(tasks))
    per_task = [*dict.fromkeys(tasks), *drawn]
    columns = ([c for c in CSV_COLUMNS if c not in PLAY_ONLY] + JUDGING_COLUMNS if judging
               else CSV_COLUMNS)  # fmt: skip
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([*columns, *(TASK_COLUMN + t for t in per_task)])
    for row in rows:
        judged = row.get("judging") or NO_JUDGEMENT
        values = {
            **row,
            "episodes_completed": row["episodes"].get(EpisodeStatus.completed, 0),
            "episodes_total": sum(row["episodes"].values()),
            "completion_code_shown": "yes" if row["completion_code_shown"] else "no",
            "judgements_answered": judged["answered"],
            **{k: judged[k] for k in ("gold_answered", "gold_correct")},
            **{k: _share(judged[k]) for k in ("gold_accuracy", "agreement")},
        }
        writer.writerow([*(_cell(values[name]) for name in columns),
                         *(str(row["episodes_by_task"].get(t, 0)) for t in per_task)])  # fmt: skip
    return out.getvalue()
