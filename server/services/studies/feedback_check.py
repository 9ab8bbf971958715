"""The pre-launch checklist with what only the database knows: whether a feedback study's
participants would have anything to judge (source episodes, pairs for each compare
question, gold items whose episodes are still there), counted as its items are drawn
(server/services/feedback). Apart from launch_check, which studies.py imports: the feedback
services read the studies' episodes through it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Episode, Study
from server.services.feedback import items as feedback_pool
from server.services.studies import launch_check
from server.services.studies.checklist_items import Item, item
from server.study_spec import StudySpec
from server.study_spec.feedback import FeedbackSpec


def checklist(db: Session, spec: StudySpec, reports: list[dict[str, Any]] | None,
              owner_id: int) -> list[Item]:  # fmt: skip
    """The pre-launch checklist of any study (:func:`launch_check.checklist`), a feedback
    study's with what its participants would judge (only ``owner_id``'s studies count)."""
    judged = feedback_items(db, spec.judging, owner_id) if spec.judging is not None else ()
    return launch_check.checklist(spec, reports, judged=judged)


def _sources(db: Session, spec: FeedbackSpec, owner_id: int | None) -> Iterable[Item]:
    """Source studies that are not the owner's play studies (a draft saved before one was
    deleted, or a study file from elsewhere)."""
    ids = spec.source.studies
    rows = db.scalars(select(Study).where(Study.id.in_(ids))).all()
    mine = {s.id for s in rows if owner_id is None or s.owner_id == owner_id}
    play = {s.id for s in rows if s.id in mine and (s.spec or {}).get("kind", "play") == "play"}
    for n, study_id in enumerate(ids):
        if study_id not in play:
            why = "is a feedback study" if study_id in mine else "is not one of your studies"
            yield item(
                "error", "source_not_found", ("feedback", "source", "studies", n),
                f"Study {study_id} {why}: its episodes cannot be judged here.",
                "Pick one of your play studies as the source.",
            )  # fmt: skip


def feedback_items(db: Session, spec: FeedbackSpec, owner_id: int | None) -> Iterable[Item]:
    """Whether participants would have anything to judge: source episodes, pairs for each
    compare question, gold items whose episodes are still there."""
    refused = list(_sources(db, spec, owner_id))
    yield from refused
    bad = {spec.source.studies[int(i["loc"][-1])] for i in refused}
    kept = [s for s in spec.source.studies if s not in bad]
    source = spec.source.model_copy(update={"studies": kept})
    pool = feedback_pool.pool(db, spec.model_copy(update={"source": source})) if kept else []
    if not pool:
        yield item(
            "error", "no_source_episodes", ("feedback", "source", "studies"),
            "No recorded episode of the source studies matches the filters: participants "
            "would have nothing to judge.",
            "Pick a play study that has recorded episodes, or widen the filters (episode "
            "statuses, outcomes, tags, task, environments).",
        )  # fmt: skip
    groups = feedback_pool.groups(pool)
    for n, question in enumerate(spec.questions if pool else ()):
        if question.kind == "compare" and not any(len(g) >= 2 for g in groups):
            yield item(
                "error", "nothing_to_compare", ("feedback", "questions", n),
                f"Question {n + 1} compares two episodes of one environment and task, but no "
                f"environment and task has two among the {len(pool)} episodes to judge.",
                "Record more episodes, widen the filters, or make it a rate question.",
            )  # fmt: skip
    pairs = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    wanted = sum(pairs if q.kind == "compare" else len(pool) for q in spec.questions)
    if spec.pairing == "all_pairs" and wanted > feedback_pool.MAX_ALL_PAIRS:
        yield item(
            "error", "too_many_pairs", ("feedback", "pairing"),
            f"Every pair of the {len(pool)} episodes to judge is {wanted:,} items, more than "
            f"the {feedback_pool.MAX_ALL_PAIRS:,} that all pairs may make.",
            "Choose random pairs, or filter the source to fewer episodes.",
        )  # fmt: skip
    ids = {e for g in spec.gold for e in g.episodes}
    found = {e.id: e for e in db.scalars(select(Episode).where(Episode.id.in_(ids)))}
    for n, gold in enumerate(spec.gold):
        gone = [e for e in gold.episodes if e not in found or found[e].steps < 1
                or found[e].study_id not in kept]  # fmt: skip
        if gone:
            yield item(
                "error", "gold_episode_gone", ("feedback", "gold", n),
                f"Gold item {n + 1}: episode {gone[0][:8]}… is no longer an episode of the "
                "source studies (deleted, or of a study no longer picked): this gold item "
                "would never be shown.",
                "Pick another episode for it, or remove the gold item.",
            )  # fmt: skip
    if spec.gold_min_accuracy > 0 and not spec.gold:
        yield item(
            "warning", "screening_without_gold", ("feedback", "gold_min_accuracy"),
            "Minimum gold accuracy is set but there are no gold items: nobody would ever be "
            "screened out.",
            "Add gold items with their known answers, or set the minimum to 0.",
        )  # fmt: skip
    elif spec.gold and spec.gold_rate == 0:
        yield item("warning", "gold_never_shown", ("feedback", "gold_rate"),
                   "There are gold items, but the share of gold items is 0: none is shown.",
                   "Raise the share of gold items (0.1 to 0.3 is usual).")  # fmt: skip
