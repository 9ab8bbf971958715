"""What a dataset selects now and how its split divides it: the sources' episodes resolved
(completed, not excluded by default, as exports take them), deduplicated and ordered (study,
start, id), their spaces checked to fit one dataset, each given its split
(:mod:`server.services.datasets.splits`) and counted per split, study, environment, task and
participant (pseudonymous: the agent id exports write)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from server.core.security import salted_hash
from server.models import Dataset, Episode, Study
from server.schemas.datasets import DatasetSource, DatasetSplit
from server.services.datasets import compatibility, splits
from server.services.datasets.applied import Applied, applied
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
    trim: tuple[int, int] = (0, 0)  # RLDS steps a trim drops first and last

    @property
    def steps(self) -> int:
        """Its RLDS steps as exported (after its trim)."""
        return self.episode.steps - self.trim[0] - self.trim[1]

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
    return [replace(m, split=chosen[unit_of(m)]) for m in members]


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
        row["steps"] += m.steps
        row["per_split"][m.split] += 1
    return [rows[k] for k in sorted(rows)]


def _participants(members: list[Member]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for m in members:
        row = rows.setdefault(
            m.agent_id, {"participant": m.agent_id, "split": m.split, "episodes": 0, "steps": 0}
        )
        row["episodes"] += 1
        row["steps"] += m.steps
    return sorted(rows.values(), key=lambda r: (splits.SPLITS.index(r["split"]), r["participant"]))


def _edits(members: list[Member], excluded: list[tuple[Member, str]],
           edits: Applied) -> dict[str, Any]:  # fmt: skip
    trimmed = [m for m in members if m.trim != (0, 0)]
    return {
        "excluded": [
            {
                "episode_id": m.episode.id,
                "study_id": m.episode.study_id,
                "split": m.split,
                "steps": m.steps,
                "reason": reason,
            }
            for m, reason in excluded
        ],  # fmt: skip
        "trimmed": len(trimmed),
        "steps_trimmed": sum(m.episode.steps - m.steps for m in trimmed),
        "relabelled": dict(sorted(edits.by_task.items())),
    }


def counts(dataset_id: int, split: DatasetSplit, studies: list[Study], members: list[Member],
           excluded: Sequence[tuple[Member, str]] = (),
           edits: Applied | None = None) -> dict[str, Any]:  # fmt: skip
    """The preview's answer (``DatasetPreviewPublic``) of split ``members`` (the edits'
    ``excluded`` members, with their reasons, left out of them)."""
    edits = edits or Applied()
    total = len(members)
    fractions = split.fractions() if split.by != "none" else {"train": 1.0, "validation": 0.0,
                                                              "test": 0.0}  # fmt: skip
    names = {str(s.id): s.name for s in studies}
    totals = []
    for name in splits.SPLITS:
        mine = [m for m in members if m.split == name]
        totals.append({
            "split": name, "fraction": fractions[name], "episodes": len(mine),
            "steps": sum(m.steps for m in mine),
            "participants": len({m.agent_id for m in mine}),
            "share": len(mine) / total if total else 0.0,
        })  # fmt: skip
    return {
        "dataset_id": dataset_id,
        "split_by": split.by,
        "seed": split.seed,
        "episodes": total,
        "steps": sum(m.steps for m in members),
        "participants": len({m.agent_id for m in members}),
        "message": None if total else EMPTY,
        "splits": totals,
        "studies": sorted(
            _rows(members, lambda m: str(m.episode.study_id), lambda k: names.get(k, k)),
            key=lambda r: int(r["key"]),
        ),
        "environments": _rows(members, lambda m: m.episode.env_key, lambda k: k),
        "tasks": [
            {**row, "relabel": edits.by_task.get(row["key"])}
            for row in _rows(
                members, lambda m: m.episode.task_key or "", lambda k: k or NO_TASK_LABEL
            )
        ],  # fmt: skip
        "by_participant": _participants(members),
        "assignments": [
            {
                "episode_id": m.episode.id,
                "study_id": m.episode.study_id,
                "split": m.split,
                "task_key": m.episode.task_key,
                "recorded_steps": m.episode.steps,
                "steps": m.steps,
                "trim_start": m.trim[0],
                "trim_end": m.trim[1],
                "relabel": edits.instruction(m.episode),
            }
            for m in members
        ],  # fmt: skip
        "edits": _edits(members, list(excluded), edits),
    }


@dataclass(frozen=True)
class Selected:
    """What a dataset selects now: its split rule, source studies and split members."""

    split: DatasetSplit
    studies: list[Study]
    members: list[Member]  # the edits' exclusions left out, their trims applied
    excluded: list[tuple[Member, str]] = field(default_factory=list)  # with their reasons
    edits: Applied = field(default_factory=Applied)


def select_members(db: Session, dataset: Dataset, secret_key: str, data_root: Path) -> Selected:
    """The dataset's episodes now, each with its split (in the dataset's order) and its
    trim, the edits' exclusions left out after the split (so that excluding an episode moves
    no other); 422 when a source study is gone or the environments' spaces cannot make one
    dataset."""
    sources = [DatasetSource.model_validate(s) for s in dataset.sources]
    split = DatasetSplit.model_validate(dataset.split)
    studies = check_sources(db, dataset.owner_id, sources)
    episodes = resolve(db, studies, sources)
    compatibility.check_spaces(db, episodes, secret_key, data_root)
    externals = review.external_ids(db, episodes)
    members = [Member(e, salted_hash(secret_key, review.agent_key(e, externals))) for e in episodes]
    edits = applied(db, dataset)
    kept: list[Member] = []
    excluded: list[tuple[Member, str]] = []
    for m in split_members(members, split):
        m = replace(m, trim=edits.trim(m.episode.id))
        if m.episode.id in edits.excluded:
            excluded.append((m, edits.excluded[m.episode.id]))
        else:
            kept.append(m)
    return Selected(split, studies, kept, excluded, edits)


def preview(db: Session, dataset: Dataset, secret_key: str, data_root: Path) -> dict[str, Any]:
    """What ``dataset`` selects now, split and counted; 422 when a source study is gone or
    its environments' spaces cannot make one dataset (``incompatible_environments``). An
    empty selection is not an error: counts of 0 and ``message`` say so."""
    found = select_members(db, dataset, secret_key, data_root)
    return counts(dataset.id, found.split, found.studies, found.members, found.excluded,
                  found.edits)  # fmt: skip
