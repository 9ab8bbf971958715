"""Narrations: what happened over an inclusive range of an episode's steps, in a reviewer's
words (or the episode's own participant's, after saving it). Listed, added, edited and deleted
per episode; exported and imported per study as JSON (docs/review.md, "Narration").

Steps are RLDS step indices (``0 .. episode.steps - 1``, as the replay counts them). An edit
or a deletion names the ``version`` it read: it is applied only to that version (one UPDATE
conditioned on it), so of two reviewers editing at once the second is refused (409, with the
narration as it is now) and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.errors import Conflict, Invalid, NotFound
from server.models import Episode, Narration, Study, User, utcnow
from server.schemas.narrations import MAX_TEXT
from server.study_spec.base import control_char_problem

MAX_IMPORT = 10_000  # rows of one import
MAX_BY_PARTICIPANT = 50  # narrations a participant may write on one of their episodes
_CHUNK = 500  # ids per IN (...) query
_MAX_ERRORS = 20  # problems listed in a refused import

Loc = tuple[str | int, ...]
GONE = "The episode has no such narration (it was deleted)."


def _invalid(message: str, loc: Loc, msg: str) -> Invalid:
    return Invalid(message, detail=[{"loc": list(loc), "msg": msg}])


def _text_problem(text: str) -> str | None:
    """Why ``text`` (stripped) is not a narration's text; None when it is."""
    if not text:
        return "a narration's text cannot be empty"
    if len(text) > MAX_TEXT:
        return f"a narration's text is at most {MAX_TEXT} characters (this one has {len(text)})"
    found = control_char_problem(text)
    return found[1] if found is not None else None


def check_text(text: str, loc: Loc = ("body", "text")) -> str:
    """``text`` stripped: 1..1000 characters, no control character; else a 422 at ``loc``."""
    text = text.strip()
    problem = _text_problem(text)
    if problem is not None:
        raise _invalid(f"The narration's text is not valid: {problem}.", loc, problem)
    return text


def _range_problem(
    steps: int, start: int, end: int, given: Iterable[str] = ("start_step", "end_step")
) -> tuple[str, str] | None:
    """(the field, why) when ``start..end`` is not inside ``0..steps-1`` in order; None when
    it is. ``given``: the fields the client sent (a bad order names the one it changed)."""
    last = steps - 1
    if steps <= 0:
        return "start_step", "the episode has no step to narrate"
    for field, value in (("start_step", start), ("end_step", end)):
        if not 0 <= value <= last:
            return field, f"{field} {value} is not one of the episode's steps 0..{last}"
    if start > end:
        field = "end_step" if "end_step" in given else "start_step"
        return field, f"start_step {start} is after end_step {end}"
    return None


def check_range(
    episode: Episode, start: int, end: int, prefix: Loc = ("body",),
    given: Iterable[str] = ("start_step", "end_step"),
) -> None:  # fmt: skip
    """A 422 naming the field unless ``0 <= start <= end <= episode.steps - 1``."""
    found = _range_problem(episode.steps, start, end, given)
    if found is not None:
        field, why = found
        raise _invalid(f"The narrated steps are not valid: {why}.", (*prefix, field), why)


# --- one episode's -------------------------------------------------------------------------
def list_of(db: Session, episode: Episode, participant_id: int | None = None) -> list[Narration]:
    """The episode's narrations in step order (only ``participant_id``'s own when given)."""
    query = select(Narration).where(Narration.episode_id == episode.id)
    if participant_id is not None:
        query = query.where(Narration.participant_id == participant_id)
    order = (Narration.start_step, Narration.end_step, Narration.id)
    return list(db.scalars(query.order_by(*order)).all())


def authors(db: Session, narrations: Sequence[Narration]) -> dict[int, str]:
    """The email of each author of ``narrations``, by user id."""
    ids = {n.author_id for n in narrations if n.author_id is not None}
    if not ids:
        return {}
    return dict(db.execute(select(User.id, User.email).where(User.id.in_(ids))).tuples().all())


def _commit(db: Session) -> None:
    """Commit; the episode deleted meanwhile (its foreign key gone) is a 404, not a 500."""
    try:
        db.commit()
    except IntegrityError as exc:
        db.rollback()
        raise NotFound("The episode was deleted meanwhile.") from exc


def add(
    db: Session, episode: Episode, start: int, end: int, text: str, *,
    author_id: int | None = None, participant_id: int | None = None,
) -> Narration:  # fmt: skip
    """Narrate steps ``start..end`` of the episode."""
    text = check_text(text)
    check_range(episode, start, end)
    now = utcnow()
    narration = Narration(
        episode_id=episode.id, start_step=start, end_step=end, text=text, author_id=author_id,
        participant_id=participant_id, version=1, created_at=now, updated_at=now,
    )  # fmt: skip
    db.add(narration)
    _commit(db)
    return narration


def add_by_participant(
    db: Session, episode: Episode, participant_id: int, start: int, end: int, text: str
) -> Narration:
    """The episode's own participant narrates it: at most :data:`MAX_BY_PARTICIPANT`."""
    count = db.scalar(
        select(func.count())
        .select_from(Narration)
        .where(Narration.episode_id == episode.id, Narration.participant_id == participant_id)
    )
    if (count or 0) >= MAX_BY_PARTICIPANT:
        raise Conflict(
            f"You have written the most narrations one episode takes ({MAX_BY_PARTICIPANT}).",
            code="too_many_narrations",
        )
    return add(db, episode, start, end, text, participant_id=participant_id)


def _current(db: Session, episode: Episode, narration_id: int) -> Narration:
    """The episode's narration ``narration_id`` as the database has it now; 404 if none."""
    # populate_existing: another request may have edited it since this session read it
    narration = db.get(Narration, narration_id, populate_existing=True)
    if narration is None or narration.episode_id != episode.id:
        raise NotFound(GONE)
    return narration


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its datetimes as ISO 8601 text (an error's detail is sent as it is)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def _stale(db: Session, narration: Narration) -> Conflict:
    """409: the client's version is not the narration's (the current one in the detail)."""
    return Conflict(
        "The narration was changed by someone else meanwhile: read it again, then edit that.",
        detail={"current": _jsonable(public(narration, authors(db, [narration])))},
        code="version_conflict",
    )


def edit(
    db: Session, episode: Episode, narration_id: int, version: int, *,
    text: str | None = None, start: int | None = None, end: int | None = None,
) -> Narration:  # fmt: skip
    """Change the text and/or the steps of the narration at ``version``; 409 if it moved on."""
    narration = _current(db, episode, narration_id)
    if narration.version != version:
        raise _stale(db, narration)
    values: dict[str, Any] = {}
    if text is not None:
        values["text"] = check_text(text)
    given = [f for f, v in (("start_step", start), ("end_step", end)) if v is not None]
    if given:
        new_start = narration.start_step if start is None else start
        new_end = narration.end_step if end is None else end
        check_range(episode, new_start, new_end, given=given)
        values.update(start_step=new_start, end_step=new_end)
    if not values:
        return narration  # nothing to change: not an edit
    done = db.execute(
        update(Narration)
        .where(Narration.id == narration_id, Narration.version == version)
        .values(**values, version=version + 1, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    db.commit()
    if getattr(done, "rowcount", 0) != 1:  # edited or deleted between the read and the write
        raise _stale(db, _current(db, episode, narration_id))
    return _current(db, episode, narration_id)


def remove(db: Session, episode: Episode, narration_id: int, version: int) -> None:
    """Delete the narration at ``version``; 409 if it was edited since, 404 if it is gone."""
    narration = _current(db, episode, narration_id)
    if narration.version != version:
        raise _stale(db, narration)
    done = db.execute(
        delete(Narration)
        .where(Narration.id == narration_id, Narration.version == version)
        .execution_options(synchronize_session=False)
    )
    db.commit()
    if getattr(done, "rowcount", 0) != 1:
        raise _stale(db, _current(db, episode, narration_id))


def public(narration: Narration, emails: dict[int, str]) -> dict[str, Any]:
    """What the API answers for a narration (``emails``: authors by user id)."""
    return {
        "id": narration.id,
        "episode_id": narration.episode_id,
        "start_step": narration.start_step,
        "end_step": narration.end_step,
        "text": narration.text,
        "author_id": narration.author_id,
        "author": emails.get(narration.author_id) if narration.author_id is not None else None,
        "by_participant": narration.participant_id is not None,
        "version": narration.version,
        "created_at": narration.created_at,
        "updated_at": narration.updated_at,
    }


# --- a study's, in bulk --------------------------------------------------------------------
def export_rows(db: Session, study: Study) -> list[dict[str, Any]]:
    """Every narration of the study's episodes, as the import takes them back."""
    rows = db.execute(
        select(Narration, User.email)
        .join(Episode, Episode.id == Narration.episode_id)
        .outerjoin(User, User.id == Narration.author_id)
        .where(Episode.study_id == study.id)
        .order_by(Narration.episode_id, Narration.start_step, Narration.end_step, Narration.id)
    ).all()
    return [
        {
            "episode_id": n.episode_id,
            "start_step": n.start_step,
            "end_step": n.end_step,
            "text": n.text,
            "author": email,
            "by_participant": n.participant_id is not None,
            "created_at": n.created_at,
            "updated_at": n.updated_at,
        }
        for n, email in rows
    ]


@dataclass(frozen=True)
class ImportRow:
    """One row of an import (the export's shape)."""

    episode_id: str
    start_step: int
    end_step: int
    text: str
    author: str | None = None
    by_participant: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Imported:
    imported: int
    skipped: int  # the same narration (episode, steps, text) was there already


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def _utc(value: datetime | None, default: datetime) -> datetime:
    if value is None:
        return default
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def import_rows(
    db: Session, study: Study, rows: Sequence[ImportRow], importer_id: int | None
) -> Imported:
    """Add the rows to the study's episodes, all or nothing: a row naming an episode of another
    study, steps outside its episode's or a bad text refuses the whole import (422, each
    problem at ``[row index, field]``). A row identical to a narration already there (episode,
    steps, text), or to an earlier row, is skipped. ``author`` is matched to a user by email;
    unknown or null, the importer is the author; a ``by_participant`` row is the episode's
    participant's (no author)."""
    if len(rows) > MAX_IMPORT:
        raise _invalid(f"An import takes at most {MAX_IMPORT} narrations.", ("body",), "too many")
    ids = sorted({r.episode_id for r in rows})
    episodes: dict[str, tuple[int, int | None]] = {}
    seen: set[tuple[str, int, int, str]] = set()
    for chunk in _chunks(ids):
        ours = db.execute(
            select(Episode.id, Episode.steps, Episode.participant_id).where(
                Episode.study_id == study.id, Episode.id.in_(chunk)
            )
        ).tuples()
        episodes.update((i, (steps, who)) for i, steps, who in ours)
        there = db.execute(
            select(Narration.episode_id, Narration.start_step, Narration.end_step,
                   Narration.text).where(Narration.episode_id.in_(chunk))
        ).tuples()  # fmt: skip
        seen.update(there)
    problems: list[dict[str, Any]] = []
    texts: list[str] = []
    for i, row in enumerate(rows):
        text = row.text.strip()
        texts.append(text)
        if row.episode_id not in episodes:
            why = f"no episode {row.episode_id!r} in this study"
            problems.append({"loc": ["body", i, "episode_id"], "msg": why})
            continue
        found = _range_problem(episodes[row.episode_id][0], row.start_step, row.end_step)
        if found is not None:
            problems.append({"loc": ["body", i, found[0]], "msg": found[1]})
        if (problem := _text_problem(text)) is not None:
            problems.append({"loc": ["body", i, "text"], "msg": problem})
        for field in ("created_at", "updated_at"):
            try:
                _utc(getattr(row, field), utcnow())
            except (OverflowError, ValueError):
                problems.append({"loc": ["body", i, field], "msg": "not a time in UTC's range"})
    if problems:
        first = problems[0]
        where = f"row {first['loc'][1]}, {first['loc'][2]}"
        more = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        raise Invalid(
            f"Nothing was imported: {where}: {first['msg']}{more}.",
            detail=problems[:_MAX_ERRORS],
        )
    emails = {r.author for r in rows if r.author}
    users: dict[str, int] = {}
    for chunk in _chunks(sorted(emails)):
        found_users = select(User.email, User.id).where(User.email.in_(chunk))
        users.update(db.execute(found_users).tuples().all())
    now = utcnow()
    added = 0
    for row, text in zip(rows, texts, strict=True):
        key = (row.episode_id, row.start_step, row.end_step, text)
        if key in seen:
            continue
        seen.add(key)
        participant = episodes[row.episode_id][1] if row.by_participant else None
        author = None  # the participant's own words
        if participant is None:
            author = users.get(row.author or "", importer_id)
        created = _utc(row.created_at, now)
        db.add(Narration(
            episode_id=row.episode_id, start_step=row.start_step, end_step=row.end_step,
            text=text, author_id=author, participant_id=participant, version=1,
            created_at=created, updated_at=_utc(row.updated_at, created),
        ))  # fmt: skip
        added += 1
    _commit(db)
    return Imported(imported=added, skipped=len(rows) - added)
