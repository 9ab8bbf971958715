"""A feedback study's items: the source episodes they are cut from, clips, random and
every-pair items, and the gold items of the spec (docs/feedback.md).

Items are rows (:class:`server.models.FeedbackItem`), one per distinct question, episodes
and clip starts (``signature``), so every participant who is given "the same pair" judges
the same row and its judgements can be compared.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import Episode, FeedbackItem, Study
from server.services.review import review
from server.study_spec.feedback import FeedbackQuestion, FeedbackSpec

MAX_POOL = 5_000  # source episodes read per draw (the newest first)
MAX_ALL_PAIRS = 5_000  # items that all_pairs may make for one study


def pool(db: Session, spec: FeedbackSpec) -> list[Episode]:
    """The source episodes (at least one step each), as the episodes page filters them;
    excluded episodes and designers' test plays are left out."""
    src = spec.source
    flt = review.EpisodeFilter(
        statuses=list(src.statuses), env_keys=src.environments, tags=src.tags,
        exclude_tags=src.exclude_tags, outcomes=src.outcomes, excluded=False, task=src.task,
    )  # fmt: skip
    found: list[Episode] = []
    for study_id in src.studies:
        query = review.filtered(study_id, flt).where(Episode.steps >= 1)
        found.extend(db.scalars(query.order_by(Episode.id.desc()).limit(MAX_POOL)))
    return found[:MAX_POOL]


def groups(episodes: Sequence[Episode]) -> list[list[Episode]]:
    """Episodes that may be compared: one study, environment and task."""
    by: dict[tuple[Any, ...], list[Episode]] = defaultdict(list)
    for ep in episodes:
        by[(ep.study_id, ep.env_key, ep.task_key)].append(ep)
    return [g for _, g in sorted(by.items(), key=lambda kv: str(kv[0]))]


def clip(episode: Episode, start: int | None, clip_steps: int | None) -> tuple[int, int]:
    """The inclusive step range of a clip of ``episode`` from ``start`` (whole episode:
    ``clip_steps`` None); a start past the end is moved back so the clip fits."""
    last = episode.steps - 1
    if clip_steps is None:
        return 0, last
    length = min(clip_steps, episode.steps)
    first = min(max(start or 0, 0), episode.steps - length)
    return first, first + length - 1


def _random_start(episode: Episode, clip_steps: int | None, rng: random.Random) -> int:
    if clip_steps is None or episode.steps <= clip_steps:
        return 0
    return rng.randrange(episode.steps - clip_steps + 1)


def _signature(question: str, a: str, a_start: int, b: str | None, b_start: int | None,
               gold: bool) -> str:  # fmt: skip
    return f"{'gold:' if gold else ''}{question}:{a}:{a_start}:{b or '-'}:{b_start or 0}"


def _by_signature(db: Session, study_id: int, sig: str) -> FeedbackItem | None:
    return db.scalar(select(FeedbackItem).where(FeedbackItem.study_id == study_id,
                                                FeedbackItem.signature == sig))  # fmt: skip


def get_or_make(db: Session, study: Study, spec: FeedbackSpec, question: FeedbackQuestion,
                a: Episode, a_start: int, b: Episode | None = None, b_start: int | None = None,
                gold: dict[str, Any] | None = None) -> FeedbackItem:  # fmt: skip
    """The item of these clips (made when new). Concurrent makers of one item agree: the
    signature is unique per study, the loser reads the winner's row."""
    first, last = clip(a, a_start, spec.clip_steps)
    second = clip(b, b_start, spec.clip_steps) if b is not None else (None, None)
    sig = _signature(question.id, a.id, first, b.id if b else None, second[0], gold is not None)
    found = _by_signature(db, study.id, sig)
    if found is not None:
        return found
    item = FeedbackItem(
        study_id=study.id, question_key=question.id, kind=question.kind, signature=sig,
        episode_a=a.id, a_start=first, a_end=last, episode_b=b.id if b else None,
        b_start=second[0], b_end=second[1], is_gold=gold is not None, gone=False,
        **(gold or {}),
    )  # fmt: skip
    try:
        with db.begin_nested():
            db.add(item)
    except IntegrityError:
        found = _by_signature(db, study.id, sig)
        if found is None:
            raise
        return found
    return item


def random_item(
    db: Session, study: Study, spec: FeedbackSpec, question: FeedbackQuestion,
    episodes: Sequence[Episode], rng: random.Random,
) -> FeedbackItem | None:  # fmt: skip
    """A random clip (or, for compare, pair of one environment and task) as an item; None
    when the source has too few episodes."""
    if question.kind != "compare":
        if not episodes:
            return None
        ep = rng.choice(list(episodes))
        return get_or_make(db, study, spec, question, ep, _random_start(ep, spec.clip_steps, rng))
    pairs = [g for g in groups(episodes) if len(g) >= 2]
    if not pairs:
        return None
    group = rng.choices(pairs, weights=[len(g) * (len(g) - 1) for g in pairs])[0]
    a, b = sorted(rng.sample(group, 2), key=lambda e: e.id)  # one row per unordered pair
    return get_or_make(db, study, spec, question, a, _random_start(a, spec.clip_steps, rng),
                       b, _random_start(b, spec.clip_steps, rng))  # fmt: skip


def make_all_pairs(db: Session, study: Study, spec: FeedbackSpec,
                   episodes: Sequence[Episode]) -> int:  # fmt: skip
    """Every pair of each group for compare questions, every episode for the others (clips
    from step 0); 409 when that would be more than MAX_ALL_PAIRS items."""
    wanted = 0
    for q in spec.questions:
        if q.kind == "compare":
            wanted += sum(len(g) * (len(g) - 1) // 2 for g in groups(episodes))
        else:
            wanted += len(episodes)
    if wanted > MAX_ALL_PAIRS:
        raise Conflict(
            f"Every pair of these episodes is {wanted} items (at most {MAX_ALL_PAIRS}): "
            "choose random pairs, or filter the source to fewer episodes.", code="too_many_items",
        )  # fmt: skip
    for q in spec.questions:
        if q.kind == "compare":
            for group in groups(episodes):
                ordered = sorted(group, key=lambda e: e.id)
                for i, a in enumerate(ordered):
                    for b in ordered[i + 1 :]:
                        get_or_make(db, study, spec, q, a, 0, b, 0)
        else:
            for ep in episodes:
                get_or_make(db, study, spec, q, ep, 0)
    return wanted


def make_gold(db: Session, study: Study, spec: FeedbackSpec) -> list[FeedbackItem]:
    """The spec's gold items as rows; a gold item whose episode is gone (or was never one of
    the designer's) is skipped."""
    made: list[FeedbackItem] = []
    for gold in spec.gold:
        question = spec.question(gold.question)
        eps = [db.get(Episode, eid) for eid in gold.episodes]
        if any(e is None or e.steps < 1 or e.study_id not in spec.source.studies for e in eps):
            continue
        starts = list(gold.starts or [0] * len(eps))
        known = {"gold_answer": gold.answer, "gold_min": gold.rating_min,
                 "gold_max": gold.rating_max}  # fmt: skip
        a = eps[0]
        assert a is not None
        b = eps[1] if len(eps) > 1 else None
        made.append(get_or_make(db, study, spec, question, a, starts[0], b,
                                starts[1] if b is not None else None, gold=known))  # fmt: skip
    return made


def episodes_exist(db: Session, item: FeedbackItem) -> bool:
    """Whether the item's episodes are still there (a deleted one marks it ``gone``)."""
    ids = [i for i in (item.episode_a, item.episode_b) if i is not None]
    present = set(db.scalars(select(Episode.id).where(Episode.id.in_(ids))))
    if len(present) == len(ids):
        return True
    item.gone = True
    return False
