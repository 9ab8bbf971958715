"""What a feedback study's designer sees of its judgements: the study's figures (its pool of
source episodes, items and judgements per question, the quota, agreement, the rate of the
last minutes, gold screen-outs, active judges) and each participant's judging record
(docs/feedback.md, "What the judgements add up to").

Counts are of real participants (a designer's preview as a participant is left out, as in
every list and count); the preference dataset (:func:`results.preference_rows`) has them all.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import FeedbackItem, Judgement, Participant, ScreenoutReason, Study, utcnow
from server.services.crowd import quotas
from server.services.feedback import dataset, items, results
from server.study_spec.feedback import FeedbackSpec

RATE_MINUTES = 10  # judgements per minute over the last ten minutes
ACTIVE_S = 120.0  # a judge seen (given an item, answering) this recently is active
# Agreement reads every judgement of the study (about 1 s for 20,000 on SQLite, 2 s on
# PostgreSQL): the dashboard's tick (every second) recomputes it only when judgements were
# answered or a judge screened out since, and then at most this often.
AGREEMENT_EVERY_S = 10.0
# the last figures per study (its id and creation time: a test database reuses ids)
_agreed: dict[tuple[int, str], tuple[float, tuple[int, int], dict[str, Any]]] = {}
REAL = Participant.is_test.is_(False)
ANSWERED = Judgement.answered_at.is_not(None)


def _judges(study_id: int) -> Any:
    return (
        select(Judgement)
        .join(Participant, Participant.id == Judgement.participant_id)
        .where(Judgement.study_id == study_id, REAL)
    )


def per_minute(db: Session, study_id: int, now: datetime) -> list[int]:
    """Judgements answered in each of the last :data:`RATE_MINUTES` minutes, oldest first
    (the last counts the 60 seconds up to ``now``)."""
    since = now - timedelta(minutes=RATE_MINUTES)
    out = [0] * RATE_MINUTES
    query = _judges(study_id).where(Judgement.answered_at > since)
    for at in db.scalars(query.with_only_columns(Judgement.answered_at)):
        ago = int((now - at).total_seconds() // 60)
        if 0 <= ago < RATE_MINUTES:
            out[RATE_MINUTES - 1 - ago] += 1
    return out


def _people(db: Session, study_id: int, now: datetime) -> dict[str, int]:
    """Judges joined, active now (seen within :data:`ACTIVE_S` and still taking part),
    completed, and screened out by their gold answers."""
    taking_part = (Participant.screened_out_at.is_(None) & Participant.completed_at.is_(None)
                   & Participant.full_at.is_(None))  # fmt: skip
    recent = Participant.last_seen_at >= now - timedelta(seconds=ACTIVE_S)
    joined, active, completed, gold = db.execute(
        select(
            func.count(),
            func.count().filter(taking_part & recent),
            func.count(Participant.completed_at),
            func.count().filter(Participant.screenout_reason == ScreenoutReason.gold),
        ).where(Participant.study_id == study_id, REAL)
    ).one()
    return {"joined": int(joined), "active": int(active), "completed": int(completed),
            "screened_out_gold": int(gold)}  # fmt: skip


def _agreement(db: Session, study: Study, spec: FeedbackSpec, key: tuple[int, int],
               fresh: bool) -> dict[str, Any]:  # fmt: skip
    """:func:`results.agreement`'s study figures; unless ``fresh``, the last ones while
    ``key`` (answered, screened out) is unchanged or they are recent (AGREEMENT_EVERY_S)."""
    study_key = (study.id, study.created_at.isoformat())
    held = _agreed.get(study_key)
    clock = time.monotonic()
    if not fresh and held is not None and (held[1] == key or clock - held[0] < AGREEMENT_EVERY_S):
        return held[2]
    found = results.agreement(db, study, spec)
    value = {"agreement": found["agreement"], "pairs": found["pairs"]}
    if len(_agreed) > 1000:  # studies watched by this process: forget the old ones
        _agreed.clear()
    _agreed[study_key] = (clock, key, value)
    return value


def live(db: Session, study: Study, spec: FeedbackSpec, fresh: bool = False) -> dict[str, Any]:
    """The figures the live dashboard shows every tick: the rate, agreement so far (at most
    AGREEMENT_EVERY_S old unless ``fresh``), progress to the quota, the judges."""
    now = utcnow()
    rate = per_minute(db, study.id, now)
    counted = quotas.judgements_answered(db, study.id)
    reached = spec.judgements_total is not None and counted >= spec.judgements_total
    answered = int(db.scalar(_judges(study.id).where(ANSWERED)
                             .with_only_columns(func.count())) or 0)  # fmt: skip
    people = _people(db, study.id, now)
    agreed = _agreement(db, study, spec, (answered, people["screened_out_gold"]), fresh)
    return {
        "at": now.isoformat(),
        "answered": answered,
        "per_minute": rate,
        "rate_per_minute": sum(rate) / RATE_MINUTES,
        "minutes": RATE_MINUTES,
        "agreement": agreed["agreement"],
        "pairs": agreed["pairs"],
        "quota": {"total": spec.judgements_total, "counted": counted, "reached": reached},
        "participants": people,
    }


def _questions(db: Session, study: Study, spec: FeedbackSpec) -> list[dict[str, Any]]:
    """Items made and judgements answered per question, in the study's order; a question no
    longer asked that has items comes after (its prompt null)."""
    made: dict[str, dict[bool, int]] = defaultdict(lambda: {False: 0, True: 0})
    for key, gold, n in db.execute(
        select(FeedbackItem.question_key, FeedbackItem.is_gold, func.count())
        .where(FeedbackItem.study_id == study.id)
        .group_by(FeedbackItem.question_key, FeedbackItem.is_gold)
    ).all():  # fmt: skip
        made[str(key)][bool(gold)] = int(n)
    answered: dict[str, dict[bool, int]] = defaultdict(lambda: {False: 0, True: 0})
    for key, gold, n in db.execute(
        _judges(study.id).join(FeedbackItem, FeedbackItem.id == Judgement.item_id)
        .where(ANSWERED)
        .with_only_columns(FeedbackItem.question_key, FeedbackItem.is_gold, func.count())
        .group_by(FeedbackItem.question_key, FeedbackItem.is_gold)
    ).all():  # fmt: skip
        answered[str(key)][bool(gold)] = int(n)
    asked = {q.id: q for q in spec.questions}
    keys = [*asked, *sorted((set(made) | set(answered)) - set(asked))]
    return [
        {"id": key, "kind": asked[key].kind if key in asked else None,
         "prompt": asked[key].prompt if key in asked else None,
         "items": made[key][False], "gold_items": made[key][True],
         "answered": answered[key][False] + answered[key][True],
         "gold_answered": answered[key][True]}
        for key in keys
    ]  # fmt: skip


def figures(db: Session, study: Study, spec: FeedbackSpec) -> dict[str, Any]:
    """The study's figures for its designer: :func:`live`'s, the source episodes in the
    pool, and items and judgements per question."""
    questions = _questions(db, study, spec)
    return {
        **live(db, study, spec, fresh=True),
        "study_id": study.id,
        "pool_episodes": len(items.pool(db, spec)),
        "pool_limit": items.MAX_POOL,
        "items": sum(q["items"] + q["gold_items"] for q in questions),
        "gold_items": sum(q["gold_items"] for q in questions),
        "gold_answered": sum(q["gold_answered"] for q in questions),
        "questions": questions,
    }


def participant_figures(db: Session, study: Study, spec: FeedbackSpec) -> dict[int, dict[str, Any]]:
    """Per participant with a judgement: judgements answered, gold answered and right (and
    the accuracy), agreement with the others on the items they shared."""
    agreed = results.agreement(db, study, spec)["participants"]
    answered = dict(
        db.execute(
            select(Judgement.participant_id, func.count())
            .where(Judgement.study_id == study.id, ANSWERED)
            .group_by(Judgement.participant_id)
        ).all()
    )
    empty = {"agreement": None, "gold_answered": 0, "gold_correct": 0, "gold_accuracy": None}
    return {
        int(pid): {"answered": int(answered.get(pid) or 0), **agreed.get(pid, empty)}
        for pid in set(answered) | set(agreed)
    }


def preference_file(db: Session, study: Study, spec: FeedbackSpec, name: str) -> bytes:
    """One file of the study's preference dataset (``dataset.JSONL`` or ``dataset.PARQUET``),
    every answered judgement."""
    return dataset.ENCODERS[name](results.preference_rows(db, study, spec))
