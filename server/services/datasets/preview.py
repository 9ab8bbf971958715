"""What a dataset selects now and how its split divides it: the sources' episodes resolved
(completed, not excluded by default, as exports take them), deduplicated and ordered (study,
start, id), their spaces checked to fit one dataset, each given its split
(:mod:`server.services.datasets.splits`) and counted per split, study, environment, task and
participant (pseudonymous: the agent id exports write)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from server.core.security import salted_hash
from server.models import Dataset, Episode, Study
from server.schemas.datasets import DatasetSource, DatasetSplit
from server.services.datasets import compatibility, splits
from server.services.datasets.datasets import check_sources
from server.services.exports.selection import selection_filter
from server.services.review import review

EMPTY = (
    "No episode matches this dataset's sources (only completed episodes are taken unless a "
    "source chooses other statuses; excluded ones only when a source asks for them)."
)
NO_TASK_LABEL = "no task"


@dataclass(frozen=True)
class Member:
    """One episode of the dataset, with what it is counted by."""

    episode: Episode
    agent_id: str  # pseudonymous, as exports write it
    split: str = ""

    @property
    def stratum(self) -> tuple[str, str]:
        return (self.episode.env_key, self.episode.task_key or "")


def resolve(db: Session, studies: list[Study], sources: list[DatasetSource]) -> list[Episode]:
    """The sources' episodes, each once, by study id, start time and episode id."""
    found: dict[str, Episode] = {}
    for study, source in zip(studies, sources, strict=True):
        query = review.filtered(study.id, selection_filter(source.filter))
        for e in db.scalars(query):
            found.setdefault(e.id, e)
    return sorted(found.values(), key=lambda e: (e.study_id, e.started_at, e.id))


def split_members(members: list[Member], split: DatasetSplit) -> list[Member]:
    """``members`` with their splits, by the split's rule."""
    if split.by == "episode":
        units = [splits.Unit(m.episode.id, m.stratum, 1) for m in members]
    else:
        groups: dict[str, list[Member]] = {}
        for m in members:
            groups.setdefault(m.agent_id, []).append(m)
        units = [
            splits.Unit(agent, splits.dominant_stratum(m.stratum for m in group), len(group))
            for agent, group in groups.items()
        ]
    if split.by == "none":
        chosen = splits.assign_all_to_train(units)
    else:
        chosen = splits.assign(units, split.fractions(), split.seed)
    unit_of = (lambda m: m.episode.id) if split.by == "episode" else (lambda m: m.agent_id)
    return [Member(m.episode, m.agent_id, chosen[unit_of(m)]) for m in members]


def _rows(
    members: Iterable[Member], key: Callable[[Member], str], label: Callable[[str], str]
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for m in members:
        k = key(m)
        row = rows.setdefault(
            k, {"key": k, "label": label(k), "episodes": 0, "steps": 0,
                "per_split": dict.fromkeys(splits.SPLITS, 0)},
        )  # fmt: skip
        row["episodes"] += 1
        row["steps"] += m.episode.steps
        row["per_split"][m.split] += 1
    return [rows[k] for k in sorted(rows)]


def _participants(members: list[Member]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for m in members:
        row = rows.setdefault(
            m.agent_id, {"participant": m.agent_id, "split": m.split, "episodes": 0, "steps": 0}
        )
        row["episodes"] += 1
        row["steps"] += m.episode.steps
    return sorted(rows.values(), key=lambda r: (splits.SPLITS.index(r["split"]), r["participant"]))


def counts(dataset_id: int, split: DatasetSplit, studies: list[Study],
           members: list[Member]) -> dict[str, Any]:  # fmt: skip
    """The preview's answer (``DatasetPreviewPublic``) of split ``members``."""
    total = len(members)
    fractions = split.fractions() if split.by != "none" else {"train": 1.0, "validation": 0.0,
                                                              "test": 0.0}  # fmt: skip
    names = {str(s.id): s.name for s in studies}
    totals = []
    for name in splits.SPLITS:
        mine = [m for m in members if m.split == name]
        totals.append({
            "split": name, "fraction": fractions[name], "episodes": len(mine),
            "steps": sum(m.episode.steps for m in mine),
            "participants": len({m.agent_id for m in mine}),
            "share": len(mine) / total if total else 0.0,
        })  # fmt: skip
    return {
        "dataset_id": dataset_id,
        "split_by": split.by,
        "seed": split.seed,
        "episodes": total,
        "steps": sum(m.episode.steps for m in members),
        "participants": len({m.agent_id for m in members}),
        "message": None if total else EMPTY,
        "splits": totals,
        "studies": sorted(
            _rows(members, lambda m: str(m.episode.study_id), lambda k: names.get(k, k)),
            key=lambda r: int(r["key"]),
        ),
        "environments": _rows(members, lambda m: m.episode.env_key, lambda k: k),
        "tasks": _rows(members, lambda m: m.episode.task_key or "", lambda k: k or NO_TASK_LABEL),
        "by_participant": _participants(members),
        "assignments": [
            {"episode_id": m.episode.id, "study_id": m.episode.study_id, "split": m.split}
            for m in members
        ],
    }


@dataclass(frozen=True)
class Selected:
    """What a dataset selects now: its split rule, source studies and split members."""

    split: DatasetSplit
    studies: list[Study]
    members: list[Member]


def select_members(db: Session, dataset: Dataset, secret_key: str, data_root: Path) -> Selected:
    """The dataset's episodes now, each with its split (in the dataset's order); 422 when a
    source study is gone or the environments' spaces cannot make one dataset."""
    sources = [DatasetSource.model_validate(s) for s in dataset.sources]
    split = DatasetSplit.model_validate(dataset.split)
    studies = check_sources(db, dataset.owner_id, sources)
    episodes = resolve(db, studies, sources)
    compatibility.check_spaces(db, episodes, secret_key, data_root)
    externals = review.external_ids(db, episodes)
    members = [Member(e, salted_hash(secret_key, review.agent_key(e, externals))) for e in episodes]
    return Selected(split, studies, split_members(members, split))


def preview(db: Session, dataset: Dataset, secret_key: str, data_root: Path) -> dict[str, Any]:
    """What ``dataset`` selects now, split and counted; 422 when a source study is gone or
    its environments' spaces cannot make one dataset (``incompatible_environments``). An
    empty selection is not an error: counts of 0 and ``message`` say so."""
    found = select_members(db, dataset, secret_key, data_root)
    return counts(dataset.id, found.split, found.studies, found.members)
