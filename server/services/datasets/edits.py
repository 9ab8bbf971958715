"""Dataset edits: trims, relabels and exclusions of a dataset's episodes that never change a
recorded value (the exporter applies them as it reads each episode:
:func:`server.export.base.read_for_writing`).

At most one trim and one exclusion per episode, one relabel per episode and per task: the
database's unique constraints hold that even for two sessions at once, so the second is a
409 naming who made the first and when (never a silent overwrite); a PUT replaces an edit,
a DELETE removes it. Every edit is checked against what the dataset selects now (422 at the
field): its episode is one of them, a trim keeps at least 2 RLDS steps inside the episode, a
relabel's task is one of theirs and its instruction is not empty, an exclusion says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.errors import Conflict, Invalid, NotFound
from server.models import Dataset, DatasetEdit, Episode
from server.models.base import utcnow
from server.schemas.dataset_edits import FIELDS, DatasetEditCreate, EditValues
from server.services.datasets import preview as dataset_preview
from server.services.datasets.applied import edits_of

MIN_STEPS = 2  # an RLDS episode's first and last step
NOUNS = {"trim": "a trim", "relabel": "a relabel", "exclude": "an exclusion"}
__all__ = ["edits_of"]


def _invalid(field_: str, why: str) -> Invalid:
    return Invalid(f"This edit is not valid: {why}.",
                   detail=[{"loc": ["body", field_], "msg": why}])  # fmt: skip


def _check_values(kind: str, values: EditValues, given: set[str], steps: int | None) -> None:
    """422 at the field unless ``values`` fit an edit of ``kind`` (``steps``: its episode's
    RLDS steps, for a trim)."""
    extra = sorted(given - FIELDS[kind] - {"kind"})
    if extra:
        raise _invalid(extra[0], f"a {kind} takes only {', '.join(sorted(FIELDS[kind]))}")
    if kind == "trim":
        start, end = values.trim_start, values.trim_end
        if start == 0 and end == 0:
            raise _invalid("trim_start", "a trim drops at least one step (trim_start or trim_end)")
        assert steps is not None
        if start >= steps or end >= steps:
            loc = "trim_start" if start >= steps else "trim_end"
            raise _invalid(loc, f"the episode has {steps} RLDS steps (0..{steps - 1}): "
                                f"{max(start, end)} is outside it")  # fmt: skip
        if steps - start - end < MIN_STEPS:
            raise _invalid(
                "trim_end" if end else "trim_start",
                f"the episode has {steps} RLDS steps: dropping {start} first and {end} last "
                f"leaves {max(steps - start - end, 0)}; keep at least {MIN_STEPS}",
            )
    elif kind == "relabel" and not values.instruction:
        raise _invalid("instruction", "give the new instruction (it is empty)")
    elif kind == "exclude" and not values.reason:
        raise _invalid("reason", "say why the episode is excluded")


def _selected(db: Session, dataset: Dataset, secret_key: str, data_root: Path) -> list[Episode]:
    """The episodes the dataset's sources select now, its own exclusions' too (an excluded
    episode may be trimmed or relabelled for when it is brought back)."""
    found = dataset_preview.select_members(db, dataset, secret_key, data_root)
    return [m.episode for m in found.members] + [m.episode for m, _ in found.excluded]


def _target(body: DatasetEditCreate, selected: Sequence[Episode]) -> Episode | None:
    """The selected episode ``body`` edits (None: a task's relabel), checked (422s)."""
    if body.kind == "relabel" and (body.episode_id is None) == (body.task_key is None):
        raise _invalid("episode_id", "a relabel names an episode or a task_key (one of them)")
    if body.kind != "relabel" and body.task_key is not None:
        raise _invalid("task_key", f"a {body.kind} applies to an episode (episode_id), not a task")
    if body.kind != "relabel" and body.episode_id is None:
        raise _invalid("episode_id", f"a {body.kind} names the episode it applies to")
    if body.task_key is not None:
        tasks = sorted({e.task_key for e in selected if e.task_key})
        if body.task_key not in tasks:
            known = ", ".join(tasks) or "none"
            raise _invalid("task_key", f"no episode of this dataset drew task {body.task_key!r} "
                                       f"(its tasks: {known})")  # fmt: skip
        return None
    episode = next((e for e in selected if e.id == body.episode_id), None)
    if episode is None:
        raise _invalid("episode_id", f"episode {body.episode_id} is not one this dataset "
                                     "selects")  # fmt: skip
    return episode


def _taken(db: Session, dataset: Dataset, kind: str, episode_id: str | None,
           task_key: str | None) -> DatasetEdit | None:  # fmt: skip
    query = select(DatasetEdit).where(DatasetEdit.dataset_id == dataset.id,
                                      DatasetEdit.kind == kind)  # fmt: skip
    if episode_id is not None:
        query = query.where(DatasetEdit.episode_id == episode_id)
    else:
        query = query.where(DatasetEdit.task_key == task_key)
    return db.scalar(query)


def _conflict(edit: DatasetEdit) -> Conflict:
    what = f"episode {edit.episode_id}" if edit.episode_id else f"task {edit.task_key}"
    when = f"{edit.created_at:%Y-%m-%d %H:%M:%S} UTC"
    return Conflict(
        f"{what[0].upper()}{what[1:]} already has {NOUNS[edit.kind]} by {edit.author.email} at "
        f"{when}; reload to see it (replace it with PUT, or remove it).",
        detail={"edit_id": edit.id, "author": edit.author.email, "created_at": when},
    )


def create_edit(db: Session, dataset: Dataset, author_id: int, body: DatasetEditCreate, *,
                secret_key: str, data_root: Path) -> DatasetEdit:  # fmt: skip
    """A new edit of ``dataset``; 422 at the field, 409 when its episode (or task) already
    has one of that kind (also when another session made it a moment ago)."""
    episode = _target(body, _selected(db, dataset, secret_key, data_root))
    _check_values(body.kind, body, set(body.model_fields_set) - {"episode_id", "task_key"},
                  episode.steps if episode is not None else None)  # fmt: skip
    existing = _taken(db, dataset, body.kind, body.episode_id, body.task_key)
    if existing is not None:
        raise _conflict(existing)
    edit = DatasetEdit(
        dataset_id=dataset.id, kind=body.kind, episode_id=body.episode_id,
        task_key=body.task_key, trim_start=body.trim_start, trim_end=body.trim_end,
        instruction=body.instruction or "", reason=body.reason or "", author_id=author_id,
    )  # fmt: skip
    db.add(edit)
    try:
        db.commit()
    except IntegrityError:  # another session made it between the check and here
        db.rollback()
        existing = _taken(db, dataset, body.kind, body.episode_id, body.task_key)
        if existing is None:  # pragma: no cover (the constraint names no other reason)
            raise
        raise _conflict(existing) from None
    return edit


def get_edit(db: Session, dataset: Dataset, edit_id: int) -> DatasetEdit:
    edit = db.get(DatasetEdit, edit_id)
    if edit is None or edit.dataset_id != dataset.id:
        raise NotFound("No such edit of this dataset.")
    return edit


def update_edit(db: Session, dataset: Dataset, edit_id: int, author_id: int, body: EditValues,
                *, secret_key: str, data_root: Path) -> DatasetEdit:  # fmt: skip
    """Replace an edit's values (its kind and what it edits stay); it is then the replacer's,
    made now."""
    edit = get_edit(db, dataset, edit_id)
    steps = None
    if edit.kind == "trim":
        episode = next((e for e in _selected(db, dataset, secret_key, data_root)
                        if e.id == edit.episode_id), None)  # fmt: skip
        if episode is None:
            raise _invalid("trim_start", f"episode {edit.episode_id} is no longer one this "
                                         "dataset selects; remove this trim")  # fmt: skip
        steps = episode.steps
    _check_values(edit.kind, body, set(body.model_fields_set), steps)
    if edit.kind == "trim":
        edit.trim_start, edit.trim_end = body.trim_start, body.trim_end
    elif edit.kind == "relabel":
        edit.instruction = body.instruction or ""
    else:
        edit.reason = body.reason or ""
    edit.author_id = author_id
    edit.created_at = utcnow()
    db.commit()
    db.refresh(edit)
    return edit


def delete_edit(db: Session, dataset: Dataset, edit_id: int) -> None:
    db.delete(get_edit(db, dataset, edit_id))
    db.commit()
