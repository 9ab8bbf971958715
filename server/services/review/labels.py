"""Labels a reviewer puts on one episode: episode and step tags, the outcome, the excluded
mark and notes; and the tag names a study uses (for filter pickers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from server.errors import Invalid, NotFound
from server.models import Episode, EpisodeTag, Note, Outcome, StepTag


def check_tag_name(name: str, loc: str) -> str:
    name = name.strip()
    if not name or len(name) > 64 or any(c in name for c in ",\n\r\t"):
        raise Invalid(
            "A tag name is 1 to 64 characters without commas, tabs or newlines.",
            detail=[{"loc": ["body", loc], "msg": "bad tag name"}],
        )
    return name


def add_tag(db: Session, episode: Episode, name: str, author_id: int | None) -> EpisodeTag:
    """Tag the episode (adding an existing tag is a no-op returning it)."""
    name = check_tag_name(name, "name")
    for tag in episode.tags:
        if tag.name == name:
            return tag
    tag = EpisodeTag(episode_id=episode.id, name=name, author_id=author_id)
    episode.tags.append(tag)
    db.commit()
    return tag


def _remove_first(
    db: Session, items: list[Any], matches: Callable[[Any], bool], missing: str
) -> None:
    """Remove the first of ``items`` that ``matches`` and commit; 404 ``missing`` if none."""
    for item in items:
        if matches(item):
            items.remove(item)
            db.commit()
            return
    raise NotFound(missing)


def remove_tag(db: Session, episode: Episode, name: str) -> None:
    """Remove an episode tag; 404 when the episode does not have it."""
    missing = f"The episode has no tag {name!r}."
    _remove_first(db, episode.tags, lambda tag: tag.name == name, missing)


def add_step_tag(
    db: Session, episode: Episode, name: str, start: int, end: int | None, author_id: int | None
) -> StepTag:
    """Tag step ``start`` or the inclusive range ``start..end`` (inside the episode's steps)."""
    name = check_tag_name(name, "name")
    end = start if end is None else end
    if not 0 <= start <= end < episode.steps:
        last = episode.steps - 1
        raise Invalid(
            f"Steps {start}..{end} are not inside the episode's steps 0..{last}."
            if episode.steps
            else "The episode has no step to tag.",
            detail=[{"loc": ["body", "start"], "msg": f"0 <= start <= end <= {last}"}],
        )
    for tag in episode.step_tags:
        if (tag.name, tag.start_step, tag.end_step) == (name, start, end):
            return tag
    tag = StepTag(
        episode_id=episode.id, name=name, start_step=start, end_step=end, author_id=author_id
    )
    episode.step_tags.append(tag)
    db.commit()
    return tag


def remove_step_tag(db: Session, episode: Episode, tag_id: int) -> None:
    """Remove one step tag of the episode by id."""
    missing = "The episode has no such step tag."
    _remove_first(db, episode.step_tags, lambda tag: tag.id == tag_id, missing)


def check_outcome(value: str | None, loc: str) -> str | None:
    """``success``, ``failure`` or None (unset); anything else is a 422."""
    if value is not None and value not in tuple(Outcome):
        raise Invalid(
            f"An outcome is success, failure or unset, not {value!r}.",
            detail=[{"loc": ["body", loc], "msg": "success, failure or null"}],
        )
    return value


def set_review(
    db: Session, episode: Episode, *, outcome: str | None | bool = False, excluded: bool | None
) -> Episode:
    """Set the reviewer's outcome (None unsets it; False leaves it) and/or the excluded mark."""
    if outcome is not False:
        episode.outcome = check_outcome(outcome if isinstance(outcome, str) else None, "outcome")
    if excluded is not None:
        episode.excluded = excluded
    db.commit()
    return episode


def add_note(db: Session, episode: Episode, body: str, author_id: int | None) -> Note:
    """A note on the episode."""
    body = body.strip()
    if not body:
        raise Invalid(
            "A note cannot be empty.", detail=[{"loc": ["body", "body"], "msg": "empty note"}]
        )
    note = Note(episode_id=episode.id, body=body, author_id=author_id)
    episode.notes.append(note)
    db.commit()
    return note


def notes_of(episode: Episode) -> list[Note]:
    """The episode's notes, oldest first."""
    return sorted(episode.notes, key=lambda n: (n.created_at, n.id))


def _distinct_names(table: Any, study_id: int) -> Select[Any]:
    """The tag names of ``table`` used in a study: a skip scan of its ``name`` index (one
    lookup per distinct name, not a pass over every tag), each name kept when one episode of
    the study has it."""
    first = select(func.min(table.name).label("name")).cte("names", recursive=True)
    after = table.__table__.alias("after")
    step = select(
        select(func.min(after.c.name)).where(after.c.name > first.c.name).scalar_subquery()
    ).where(first.c.name.is_not(None))
    names = first.union_all(step)
    # a scalar subquery with LIMIT 1 (an EXISTS would be planned as one join over all tags)
    used = (
        select(1)
        .select_from(table)
        .join(Episode, Episode.id == table.episode_id)
        .where(table.name == names.c.name, Episode.study_id == study_id)
        .limit(1)
        .scalar_subquery()
        .is_not(None)
    )
    return select(names.c.name).where(names.c.name.is_not(None), used)


def tag_names(db: Session, study_id: int) -> list[str]:
    """Every episode and step tag name used in a study (for filter pickers)."""
    found = set(db.scalars(_distinct_names(EpisodeTag, study_id)).all())
    found.update(db.scalars(_distinct_names(StepTag, study_id)).all())
    return sorted(found)
