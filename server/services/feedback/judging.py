"""Judging: which item a participant is given next, their answer, gold and screening.

Every draw and answer runs under the study's lock (:func:`quotas.lock_study`), so a burst of
participants never gives one item to more than K of them and a judgement is answered once.
A participant's open judgement (given, not answered) is given again on a reload: the minimum
watch time counts from when it was first given. Gold items are drawn at ``gold_rate`` of a
participant's items, placed at random; nothing the participant is sent tells them apart.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.errors import Conflict, Invalid, NotFound
from server.models import (
    FeedbackItem,
    Judgement,
    Participant,
    ScreenoutReason,
    Study,
    StudyState,
    utcnow,
)
from server.services.crowd import quotas
from server.services.feedback import items, results
from server.study_spec.base import control_char_problem
from server.study_spec.feedback import FeedbackQuestion, FeedbackSpec

MAX_TEXT = 2_000  # a narrate answer
SIDES = ("left", "right", "equal", "cant_tell")
NOT_YOURS = "This item is not one you were given to judge."


# -- counts -----------------------------------------------------------------------------------
def answered_count(db: Session, participant_id: int) -> int:
    mine = Judgement.participant_id == participant_id
    return int(db.scalar(select(func.count()).where(mine, Judgement.answered_at.is_not(None))) or 0)


def quota_reached(db: Session, study: Study, spec: FeedbackSpec) -> bool:
    return (spec.judgements_total is not None
            and quotas.judgements_answered(db, study.id) >= spec.judgements_total)  # fmt: skip


# -- the next item ------------------------------------------------------------------------------
def open_judgement(db: Session, participant_id: int) -> Judgement | None:
    return db.scalar(
        select(Judgement).where(Judgement.participant_id == participant_id,
                                Judgement.answered_at.is_(None)).order_by(Judgement.id)
    )  # fmt: skip


def _judged_by(db: Session, participant_id: int) -> set[int]:
    return set(db.scalars(select(Judgement.item_id).where(
        Judgement.participant_id == participant_id)))  # fmt: skip


def _load(db: Session, study_id: int) -> dict[int, int]:
    """Judgements (answered or open) per item of the study."""
    rows = db.execute(select(Judgement.item_id, func.count()).where(
        Judgement.study_id == study_id).group_by(Judgement.item_id)).all()  # fmt: skip
    return {int(i): int(n) for i, n in rows}


def _wants_gold(db: Session, spec: FeedbackSpec, participant_id: int, answered: int,
                gold_left: int, rng: random.Random) -> bool:  # fmt: skip
    """Gold at ``gold_rate`` of the participant's items, at random places: the chance is the
    gold still due over the items still to come."""
    if gold_left == 0 or spec.gold_rate == 0:
        return False
    due = math.ceil(spec.gold_rate * spec.judgements_per_participant)
    given = int(db.scalar(
        select(func.count()).select_from(Judgement).join(FeedbackItem)
        .where(Judgement.participant_id == participant_id, FeedbackItem.is_gold.is_(True))
    ) or 0)  # fmt: skip
    still = min(due - given, gold_left)
    remaining = spec.judgements_per_participant - answered
    return still > 0 and rng.random() < still / max(remaining, 1)


def _regular(
    db: Session, study: Study, spec: FeedbackSpec, question: FeedbackQuestion,
    judged: set[int], load: dict[int, int], rng: random.Random,
) -> FeedbackItem | None:  # fmt: skip
    """A non-gold item of ``question`` the participant has not judged, with room for a judge."""
    candidates = [
        i for i in db.scalars(select(FeedbackItem).where(
            FeedbackItem.study_id == study.id, FeedbackItem.question_key == question.id,
            FeedbackItem.is_gold.is_(False), FeedbackItem.gone.is_(False)))
        if i.id not in judged and load.get(i.id, 0) < spec.judgements_per_item
    ]  # fmt: skip
    if spec.pairing == "disagreement":
        scores = disagreement(db, [c.id for c in candidates])
        started = [c for c in candidates if c.id in scores]
        if started:
            top = max(scores[c.id] for c in started)
            return rng.choice([c for c in started if scores[c.id] == top])
    elif spec.pairing == "all_pairs":
        if candidates:
            low = min(load.get(c.id, 0) for c in candidates)
            return rng.choice([c for c in candidates if load.get(c.id, 0) == low])
        return None
    started = [c for c in candidates if load.get(c.id, 0) > 0]
    if started:  # fill items already begun up to K judges before starting new ones
        return rng.choice(started)
    source = items.pool(db, spec)
    for _ in range(20):
        item = items.random_item(db, study, spec, question, source, rng)
        if item is None:
            return None
        if (
            item.id not in judged
            and not item.gone
            and load.get(item.id, 0) < spec.judgements_per_item
        ):
            return item
    return None


def _question_order(db: Session, spec: FeedbackSpec, participant_id: int) -> list[FeedbackQuestion]:
    """The questions, those the participant answered least first (a mix of every question)."""
    rows = dict(db.execute(
        select(FeedbackItem.question_key, func.count()).select_from(Judgement).join(FeedbackItem)
        .where(Judgement.participant_id == participant_id).group_by(FeedbackItem.question_key)
    ).all())  # fmt: skip
    return sorted(spec.questions, key=lambda q: int(rows.get(q.id, 0)))


def draw(db: Session, study: Study, spec: FeedbackSpec, participant: Participant,
         rng: random.Random | None = None) -> Judgement | None:  # fmt: skip
    """The participant's open judgement, else a new one; None when they are done (their
    count reached, the quota full, or nothing left they may judge)."""
    rng = rng or random.Random()
    quotas.lock_study(db, study.id)
    while (current := open_judgement(db, participant.id)) is not None:
        if spec.asked(current.item.question_key) and items.episodes_exist(db, current.item):
            db.commit()
            return current
        db.delete(current)  # its episode was deleted or its question removed: another one
        db.flush()
    answered = answered_count(db, participant.id)
    if answered >= spec.judgements_per_participant or quota_reached(db, study, spec):
        db.commit()
        return None
    made = select(FeedbackItem.id).where(FeedbackItem.study_id == study.id,
                                         FeedbackItem.is_gold.is_(False))  # fmt: skip
    if spec.pairing == "all_pairs" and db.scalar(made.limit(1)) is None:
        items.make_all_pairs(db, study, spec, items.pool(db, spec))
    judged = _judged_by(db, participant.id)
    gold = [g for g in items.make_gold(db, study, spec) if g.id not in judged and not g.gone]
    chosen: FeedbackItem | None = None
    if _wants_gold(db, spec, participant.id, answered, len(gold), rng):
        chosen = rng.choice(gold)
    if chosen is None:
        load = _load(db, study.id)
        for question in _question_order(db, spec, participant.id):
            chosen = _regular(db, study, spec, question, judged, load, rng)
            if chosen is not None and items.episodes_exist(db, chosen):
                break
            chosen = None
    if chosen is None:
        db.commit()
        return None
    judgement = Judgement(study_id=study.id, item_id=chosen.id, participant_id=participant.id,
                          swapped=chosen.kind == "compare" and rng.random() < 0.5,
                          assigned_at=utcnow())  # fmt: skip
    db.add(judgement)
    db.commit()
    return judgement


# -- answers ------------------------------------------------------------------------------------
@dataclass
class Answer:
    """A participant's answer, in their terms: ``choice`` left/right/equal/cant_tell
    (compare), ``rating`` (rate) or ``text`` (narrate)."""

    choice: str | None = None
    rating: float | None = None
    text: str | None = None


def _invalid(field: str, why: str) -> Invalid:
    return Invalid(f"The answer is not valid: {why}.",
                   detail=[{"loc": ["body", field], "msg": why}])  # fmt: skip


def _checked(question: FeedbackQuestion, judgement: Judgement, given: Answer) -> dict[str, object]:
    """The answer as stored (compare in a/b terms); 422 naming the field otherwise."""
    if question.kind == "compare":
        if given.choice not in SIDES:
            raise _invalid("choice", "choice is left, right, equal or cant_tell")
        side = {"left": "a", "right": "b"}.get(given.choice, given.choice)
        if judgement.swapped and side in ("a", "b"):
            side = "b" if side == "a" else "a"
        return {"choice": side}
    if question.kind == "rate":
        value = given.rating
        if value is None or not math.isfinite(value) or value != int(value):
            raise _invalid("rating", "rating is a whole number on the question's scale")
        if not question.scale_min <= value <= question.scale_max:
            scale = f"{question.scale_min} to {question.scale_max}"
            raise _invalid("rating", f"rating is from {scale}")
        return {"rating": float(value)}
    text = (given.text or "").strip()
    if not text or len(text) > MAX_TEXT:
        raise _invalid("text", f"text is 1 to {MAX_TEXT} characters")
    if control_char_problem(text) is not None:
        raise _invalid("text", "text must not contain control characters")
    return {"text": text}


def _correct(item: FeedbackItem, stored: dict[str, object]) -> bool | None:
    if not item.is_gold:
        return None
    if item.kind == "compare":
        return stored.get("choice") == item.gold_answer
    rating = stored.get("rating")
    assert isinstance(rating, float)
    return item.gold_min is not None and item.gold_max is not None and (
        item.gold_min <= rating <= item.gold_max)  # fmt: skip


def answer(db: Session, study: Study, spec: FeedbackSpec, participant: Participant, token: str,
           given: Answer, now: datetime | None = None) -> Judgement:  # fmt: skip
    """Record the answer to the participant's judgement ``token``, once. 404 when it is not
    theirs; 409 ``already_answered``, ``study_closed``, ``not_taking_part`` or ``too_fast``
    (then ``detail.retry_after_s``); 422 naming the field."""
    quotas.lock_study(db, study.id)
    judgement = db.scalar(select(Judgement).where(
        Judgement.token == token, Judgement.participant_id == participant.id,
        Judgement.study_id == study.id))  # fmt: skip
    if judgement is None:
        db.rollback()
        raise NotFound(NOT_YOURS, code="not_assigned")
    if judgement.answered_at is not None:
        db.rollback()
        raise Conflict("This item is already answered: each answer counts once.",
                       code="already_answered")  # fmt: skip
    if study.state != StudyState.active and not participant.is_test:
        db.rollback()
        raise Conflict("This study has ended: answers are no longer taken.", code="study_closed")
    if participant.screened_out_at is not None or participant.completed_at is not None:
        db.rollback()
        raise Conflict("You are no longer taking part in this study.", code="not_taking_part")
    item = judgement.item
    question = spec.asked(item.question_key)
    if question is None:
        db.rollback()
        raise Conflict("This question is no longer asked: please take the next item.",
                       code="item_withdrawn")  # fmt: skip
    try:
        stored = _checked(question, judgement, given)
    except Invalid:
        db.rollback()  # the study's lock is not held past a refused answer
        raise
    now = now or utcnow()
    waited = (now - judgement.assigned_at).total_seconds()
    if waited < spec.min_watch_s:
        db.rollback()
        left = round(spec.min_watch_s - waited, 1)
        raise Conflict(f"Please watch for {spec.min_watch_s:g} s before answering.",
                       code="too_fast", detail={"retry_after_s": left})  # fmt: skip
    done = db.execute(
        update(Judgement)
        .where(Judgement.id == judgement.id, Judgement.answered_at.is_(None))
        .values(answered_at=now, answer_ms=int(waited * 1000), correct=_correct(item, stored),
                **stored)
        .execution_options(synchronize_session=False)
    )  # fmt: skip
    if done.rowcount != 1:  # type: ignore[attr-defined]
        db.rollback()
        raise Conflict("This item is already answered: each answer counts once.",
                       code="already_answered")  # fmt: skip
    db.commit()
    db.refresh(judgement)
    screen(db, spec, participant)
    return judgement


def gold_record(db: Session, participant_id: int) -> tuple[int, int]:
    """(gold answers, right ones) of a participant."""
    mine = Judgement.participant_id == participant_id
    rows = db.scalars(select(Judgement.correct).where(mine, Judgement.correct.is_not(None))).all()
    return len(rows), sum(1 for r in rows if r)


def screen(db: Session, spec: FeedbackSpec, participant: Participant) -> bool:
    """Screen the participant out (reason ``gold``) once they gave ``gold_min_answers`` gold
    answers and too few were right; True when this call did."""
    if spec.gold_min_accuracy <= 0 or participant.screened_out_at is not None:
        return False
    answered, right = gold_record(db, participant.id)
    if answered < spec.gold_min_answers or right / answered >= spec.gold_min_accuracy:
        return False
    participant.screened_out_at = utcnow()
    participant.screenout_reason = ScreenoutReason.gold
    db.commit()
    return True


# -- agreement ------------------------------------------------------------------------------------
def _answers(db: Session, item_ids: list[int]) -> dict[int, list[tuple[int, object]]]:
    """(participant, answer) per item: compare choices (cant_tell left out) and ratings."""
    if not item_ids:
        return {}
    rows = db.execute(
        select(Judgement.item_id, Judgement.participant_id, Judgement.choice, Judgement.rating)
        .where(Judgement.item_id.in_(item_ids), Judgement.answered_at.is_not(None))
    ).all()  # fmt: skip
    out: dict[int, list[tuple[int, object]]] = {}
    for item_id, pid, choice, rating in rows:
        value = results.answer_value(choice, rating)
        if value is not None:
            out.setdefault(int(item_id), []).append((int(pid), value))
    return out


def disagreement(db: Session, item_ids: list[int]) -> dict[int, float]:
    """Per item judged at least once: 1 - the share of its answers that are the most common
    (0: all agree; ratings: their spread, as the share off the most common value)."""
    out = {}
    for item_id, given in _answers(db, item_ids).items():
        values = [v for _, v in given]
        most = max(values.count(v) for v in values)
        out[item_id] = 1 - most / len(values)
    return out
