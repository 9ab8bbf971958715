"""An episode's judgements in feedback studies, as its replay lists them: who judged which
clip of it, on which question, what they answered, and whether it counts in the summaries
(server/services/feedback/results.py: not gold, not a test, not screened out)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Episode, FeedbackItem, Judgement, Participant, Study
from server.services.studies import studies
from server.study_spec.feedback import FeedbackSpec

MAX_LISTED = 500


def _outcome(item: FeedbackItem, judgement: Judgement, episode_id: str) -> str | None:
    """A compare answer from the episode's side: won, lost, tie, cant_tell."""
    if item.kind != "compare" or judgement.choice is None:
        return None
    if judgement.choice in ("equal", "cant_tell"):
        return "tie" if judgement.choice == "equal" else "cant_tell"
    mine = "a" if item.episode_a == episode_id else "b"
    return "won" if judgement.choice == mine else "lost"


def episode_judgements(db: Session, episode: Episode, limit: int = MAX_LISTED) -> dict[str, Any]:
    """The episode's answered judgements, newest first (at most ``limit``), and how many
    there are."""
    eid = episode.id
    where = (
        Judgement.answered_at.is_not(None),
        (FeedbackItem.episode_a == eid) | (FeedbackItem.episode_b == eid),
    )
    query = (
        select(Judgement, FeedbackItem, Participant, Study)
        .join(FeedbackItem, FeedbackItem.id == Judgement.item_id)
        .join(Participant, Participant.id == Judgement.participant_id)
        .join(Study, Study.id == Judgement.study_id)
        .where(*where)
    )
    rows = db.execute(
        query.order_by(Judgement.answered_at.desc(), Judgement.id.desc()).limit(limit + 1)
    ).all()
    specs: dict[int, FeedbackSpec | None] = {}
    items = []
    for j, item, person, study in rows[:limit]:
        if study.id not in specs:
            specs[study.id] = studies.spec_of(study).judging
        spec = specs[study.id]
        question = spec.asked(item.question_key) if spec is not None else None
        mine_a = item.episode_a == eid
        items.append({
            "id": j.id,
            "study_id": study.id,
            "study_name": study.name,
            "question_id": item.question_key,
            "question_kind": item.kind,
            "question": question.prompt if question is not None else None,
            "start": item.a_start if mine_a else item.b_start,
            "end": item.a_end if mine_a else item.b_end,
            "other_episode": (item.episode_b if mine_a else item.episode_a)
            if item.kind == "compare" else None,
            "outcome": _outcome(item, j, eid),
            "rating": j.rating,
            "text": j.text,
            "participant": person.external_id,
            "answered_at": j.answered_at,
            "answer_ms": j.answer_ms,
            "is_gold": item.is_gold,
            "correct": j.correct,
            "counted": not item.is_gold and not person.is_test and person.screened_out_at is None,
        })  # fmt: skip
    return {"items": items, "more": len(rows) > limit}
