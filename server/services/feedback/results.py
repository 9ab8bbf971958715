"""What a feedback study's judgements say: agreement, each participant's gold accuracy and
agreement with others, per-episode summaries (wins, losses, mean rating) and the rows of the
preference dataset (docs/feedback.md).

Summaries and agreement count real participants who were not screened out, on non-gold
items; the preference rows are every answered judgement, gold marked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import FeedbackItem, Judgement, Participant, Study
from server.study_spec.feedback import FeedbackSpec


def _answered(db: Session, study_ids: Iterable[int] | None = None,
              episode_ids: Iterable[str] | None = None, counted_only: bool = True
              ) -> list[tuple[Judgement, FeedbackItem, Participant]]:  # fmt: skip
    query = (
        select(Judgement, FeedbackItem, Participant)
        .join(FeedbackItem, FeedbackItem.id == Judgement.item_id)
        .join(Participant, Participant.id == Judgement.participant_id)
        .where(Judgement.answered_at.is_not(None))
    )
    if study_ids is not None:
        query = query.where(Judgement.study_id.in_(list(study_ids)))
    if episode_ids is not None:
        ids = list(episode_ids)
        query = query.where(FeedbackItem.episode_a.in_(ids) | FeedbackItem.episode_b.in_(ids))
    if counted_only:
        query = query.where(FeedbackItem.is_gold.is_(False), Participant.is_test.is_(False),
                            Participant.screened_out_at.is_(None))  # fmt: skip
    return [tuple(row) for row in db.execute(query.order_by(Judgement.id)).all()]  # type: ignore[misc]


def answer_value(choice: str | None, rating: float | None) -> object | None:
    """What agreement compares: the rating, else the compare choice (cant_tell: none)."""
    if rating is not None:
        return rating
    return choice if choice not in (None, "cant_tell") else None


def _counted(item: FeedbackItem, person: Participant) -> bool:
    """Whether a judgement counts in agreement and summaries (the query's counted_only)."""
    return not item.is_gold and not person.is_test and person.screened_out_at is None


def agreement(db: Session, study: Study, spec: FeedbackSpec) -> dict[str, Any]:
    """The study's pairwise agreement (the share of pairs of judges of one item who gave the
    same answer; ratings count as the same within one point) and each participant's
    agreement with the others on the items they shared, with their gold record."""
    by_item: dict[int, list[tuple[int, object]]] = defaultdict(list)
    gold: dict[int, list[bool]] = defaultdict(list)
    for j, item, person in _answered(db, [study.id], counted_only=False):
        if j.correct is not None:
            gold[j.participant_id].append(bool(j.correct))
        value = answer_value(j.choice, j.rating)
        if value is not None and _counted(item, person):
            by_item[j.item_id].append((j.participant_id, value))
    same = pairs = 0
    mine: dict[int, list[float]] = defaultdict(list)
    for given in by_item.values():
        for n, (pid, value) in enumerate(given):
            others = [v for p, v in given if p != pid]
            if others:
                mine[pid].append(sum(_agree(value, v) for v in others) / len(others))
            for _, other in given[n + 1 :]:
                pairs += 1
                same += _agree(value, other)
    people = set(mine) | set(gold)
    return {
        "agreement": same / pairs if pairs else None,
        "pairs": pairs,
        "participants": {
            pid: {
                "agreement": sum(mine[pid]) / len(mine[pid]) if mine.get(pid) else None,
                "gold_answered": len(gold.get(pid, [])),
                "gold_correct": sum(gold.get(pid, [])),
                "gold_accuracy": (sum(gold[pid]) / len(gold[pid])) if gold.get(pid) else None,
            }
            for pid in people
        },
    }


def _agree(a: object, b: object) -> int:
    if isinstance(a, float) and isinstance(b, float):
        return int(abs(a - b) <= 1)
    return int(a == b)


def episode_summaries(db: Session, episode_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per episode judged in any feedback study: compare wins, losses and ties, and the
    count and mean of its ratings."""
    wanted = set(episode_ids)
    out: dict[str, dict[str, Any]] = {}

    def of(eid: str) -> dict[str, Any]:
        return out.setdefault(eid, {"wins": 0, "losses": 0, "ties": 0, "ratings": 0,
                                    "rating_sum": 0.0})  # fmt: skip

    for j, item, _ in _answered(db, episode_ids=wanted):
        if (
            item.kind == "compare"
            and item.episode_b is not None
            and j.choice in ("a", "b", "equal")
        ):
            a, b = item.episode_a, item.episode_b
            if j.choice == "equal":
                for eid in (a, b):
                    of(eid)["ties"] += 1
            else:
                winner, loser = (a, b) if j.choice == "a" else (b, a)
                of(winner)["wins"] += 1
                of(loser)["losses"] += 1
        elif item.kind == "rate" and j.rating is not None:
            s = of(item.episode_a)
            s["ratings"] += 1
            s["rating_sum"] += j.rating
    for s in out.values():
        total = s.pop("rating_sum")
        s["mean_rating"] = total / s["ratings"] if s["ratings"] else None
    return {k: v for k, v in out.items() if k in wanted}


def preference_rows(db: Session, study: Study, spec: FeedbackSpec) -> list[dict[str, Any]]:
    """One row per answered judgement (the preference dataset's schema, docs/feedback.md)."""
    rows = []
    for j, item, person in _answered(db, [study.id], counted_only=False):
        question = spec.asked(item.question_key)
        preferred = None
        if item.kind == "compare" and j.choice in ("a", "b"):
            preferred = item.episode_a if j.choice == "a" else item.episode_b
        rows.append({
            "judgement_id": j.id,
            "study_id": study.id,
            "question_id": item.question_key,
            "question_kind": item.kind,
            "question": question.prompt if question else None,
            "episode_a": item.episode_a, "a_start": item.a_start, "a_end": item.a_end,
            "episode_b": item.episode_b, "b_start": item.b_start, "b_end": item.b_end,
            "left": "b" if j.swapped else "a",
            "choice": j.choice, "preferred_episode": preferred,
            "rating": j.rating, "text": j.text,
            "participant": person.external_id, "platform": person.platform,
            "screened_out": person.screened_out_at is not None,
            "is_test": person.is_test,
            "assigned_at": j.assigned_at.isoformat(),
            "answered_at": j.answered_at.isoformat() if j.answered_at else None,
            "answer_ms": j.answer_ms,
            "is_gold": item.is_gold, "correct": j.correct,
        })  # fmt: skip
    return rows
