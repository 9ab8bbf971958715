"""Listing a study's episodes: filters, sorts, cursor pages and capped counts.

Labels (tags, outcomes, notes) are in :mod:`server.services.review.labels`, bulk actions in
:mod:`server.services.review.bulk`.

Every function that takes a principal checks ownership through :func:`studies.get_study`:
another designer's episode is a 404, like a missing one. Statuses are never changed here;
they come from the player.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Select, and_, func, literal, or_, select, tuple_
from sqlalchemy.orm import Session, selectinload

from server.errors import DomainError, Invalid
from server.models import (
    Episode,
    EpisodeStatus,
    EpisodeTag,
    Participant,
    Study,
    StudyEnvironment,
    is_row_id,
)
from server.principal import USER_PREFIX, Principal
from server.schemas.episodes import NO_TASK
from server.services.review import counts
from server.services.studies import studies

# Sort keys the list accepts ("-" prefix: descending).
SORTS: dict[str, Any] = {
    "started_at": Episode.started_at,
    "ended_at": Episode.ended_at,
    "total_reward": Episode.total_reward,
    "steps": Episode.steps,
    "duration_s": Episode.duration_s,
    "latency_p50_ms": Episode.latency_p50_ms,
    "latency_p99_ms": Episode.latency_p99_ms,
    "idle_share": Episode.idle_share,
    "inputs_per_s": Episode.inputs_per_s,
    "intervention_share": Episode.intervention_share,
    "frames_dropped": Episode.frames_dropped,
    "status": Episode.status,
    "env_key": Episode.env_key,
    # the participant's external id (designers' test plays, without one, sort first)
    "participant": Participant.external_id,
}
NULLABLE_SORTS = frozenset(
    {"ended_at", "duration_s", "latency_p50_ms", "latency_p99_ms", "idle_share", "inputs_per_s",
     "intervention_share"}
)  # fmt: skip
DEFAULT_SORT = "-started_at"
MAX_PAGE = 500
COUNT_CAP = 10_000  # the list counts matches up to this (exact_count=true counts them all)


@dataclass(frozen=True)
class EpisodeFilter:
    """Which of a study's episodes to show or export (empty fields do not filter)."""

    statuses: Sequence[str] = ()
    env_keys: Sequence[str] = ()
    participants: Sequence[str] = ()  # external ids, or "user:<id>" for designers' test plays
    tags: Sequence[str] = ()  # required: every one of them
    exclude_tags: Sequence[str] = ()  # none of them
    since: datetime | None = None
    until: datetime | None = None
    min_return: float | None = None  # total_reward >= min_return
    max_return: float | None = None  # total_reward <= max_return
    min_steps: int | None = None  # steps >= min_steps
    max_steps: int | None = None  # steps <= max_steps
    # quality flags (server/services/review/quality.py); episodes without the signal do not match
    p99_over_ms: float | None = None  # latency_p99_ms > p99_over_ms
    idle_over: float | None = None  # idle_share > idle_over (0..1)
    under_median: float | None = None  # steps < under_median x the environment's median
    over_median: float | None = None  # steps > over_median x the environment's median
    # designers' test plays: left out unless asked for (or named as user:<id> participants)
    include_tests: bool = False
    outcomes: Sequence[str] = ()  # effective outcomes: "success", "failure", "unset"
    excluded: bool | None = None  # None: both; True: only excluded; False: only kept
    replay_verdicts: Sequence[str] = ()  # ReplayVerdict values (server/models/episodes.py)
    # the task drawn (episodes.task_key); NO_TASK: episodes without one; None: any
    task: str | None = None

    @property
    def tests_included(self) -> bool:
        return self.include_tests or any(p.startswith(USER_PREFIX) for p in self.participants)


UNSET = "unset"


def effective_outcome_column() -> Any:
    """The reviewer's outcome, else the player's (NULL: unset)."""
    return func.coalesce(Episode.outcome, Episode.player_outcome)


def effective_outcome(episode: Episode) -> str | None:
    """The reviewer's outcome, else the player's; None when neither said."""
    return episode.outcome or episode.player_outcome


@dataclass(frozen=True)
class EpisodePage:
    """One page of a filtered list."""

    items: list[Episode]
    total: int | None  # None: not counted
    offset: int
    limit: int
    total_exact: bool = True  # False: more than ``total`` match (the count stopped)
    next_cursor: str | None = None  # ``after`` of the next page (None: the last page)


def agent_key(episode: Episode, external_ids: dict[int, str]) -> str:
    """What identifies the player: the participant's external id or ``user:<id>``."""
    if episode.participant_id is not None and episode.participant_id in external_ids:
        return external_ids[episode.participant_id]
    return f"{USER_PREFIX}{episode.user_id}" if episode.user_id is not None else "unknown"


def filtered(study_id: int, flt: EpisodeFilter) -> Select[Any]:
    """The select of a study's episodes matching ``flt``."""
    query = select(Episode).where(Episode.study_id == study_id)
    if not flt.tests_included:
        query = query.where(counts.PARTICIPANT_PLAY)
    if flt.statuses:
        query = query.where(Episode.status.in_(list(flt.statuses)))
    if flt.env_keys:
        query = query.where(Episode.env_key.in_(list(flt.env_keys)))
    if flt.participants:
        externals = [p for p in flt.participants if not p.startswith(USER_PREFIX)]
        user_ids = [
            int(p[len(USER_PREFIX) :])
            for p in flt.participants
            if p.startswith(USER_PREFIX) and is_row_id(p[len(USER_PREFIX) :])
        ]
        by_participant = Episode.participant_id.in_(
            select(Participant.id).where(
                Participant.study_id == study_id, Participant.external_id.in_(externals)
            )
        )
        query = query.where(
            by_participant | (Episode.participant_id.is_(None) & Episode.user_id.in_(user_ids))
        )
    for tag in dict.fromkeys(flt.tags):
        query = query.where(
            Episode.id.in_(select(EpisodeTag.episode_id).where(EpisodeTag.name == tag))
        )
    if flt.exclude_tags:
        query = query.where(
            Episode.id.not_in(
                select(EpisodeTag.episode_id).where(EpisodeTag.name.in_(list(flt.exclude_tags)))
            )
        )
    if flt.since is not None:
        query = query.where(Episode.started_at >= flt.since)
    if flt.until is not None:
        query = query.where(Episode.started_at <= flt.until)
    if flt.min_return is not None:
        query = query.where(Episode.total_reward >= flt.min_return)
    if flt.max_return is not None:
        query = query.where(Episode.total_reward <= flt.max_return)
    if flt.outcomes:
        effective = effective_outcome_column()
        named = [o for o in flt.outcomes if o != UNSET]
        condition = effective.in_(named)
        if UNSET in flt.outcomes:
            condition = condition | effective.is_(None)
        query = query.where(condition)
    if flt.excluded is not None:
        query = query.where(Episode.excluded.is_(flt.excluded))
    if flt.replay_verdicts:
        query = query.where(Episode.replay_verdict.in_(list(flt.replay_verdicts)))
    if flt.task == NO_TASK:
        query = query.where(Episode.task_key.is_(None))
    elif flt.task is not None:  # (study_id, task_key): ix_episodes_study_task
        query = query.where(Episode.task_key == flt.task)
    return _quality_filters(query, flt)


def _quality_filters(query: Select[Any], flt: EpisodeFilter) -> Select[Any]:
    if flt.min_steps is not None:
        query = query.where(Episode.steps >= flt.min_steps)
    if flt.max_steps is not None:
        query = query.where(Episode.steps <= flt.max_steps)
    if flt.p99_over_ms is not None:
        query = query.where(Episode.latency_p99_ms > flt.p99_over_ms)
    if flt.idle_over is not None:
        query = query.where(Episode.idle_share > flt.idle_over)
    if flt.under_median is not None or flt.over_median is not None:
        # the cached median of each environment (a join, not a per-row subquery)
        median = StudyEnvironment.median_steps
        query = query.join(StudyEnvironment, StudyEnvironment.id == Episode.study_env_id)
        query = query.where(median.is_not(None), Episode.status != EpisodeStatus.recording)
        if flt.under_median is not None:
            query = query.where(Episode.steps < median * flt.under_median)
        if flt.over_median is not None:
            query = query.where(Episode.steps > median * flt.over_median)
    return query


def _order(sort: str) -> tuple[Any, Any]:
    """(column, ORDER BY term) of a sort key; 422 for an unknown one."""
    column = SORTS.get(sort.removeprefix("-"))
    if column is None:
        raise Invalid(
            f"Unknown sort {sort!r}.",
            detail=[{"loc": ["query", "sort"], "msg": f"one of {sorted(SORTS)} (- for desc)"}],
        )
    desc = sort.startswith("-")
    order = column.desc() if desc else column.asc()
    if column is Participant.external_id:
        return column, order.nulls_last() if desc else order.nulls_first()
    if sort.removeprefix("-") in NULLABLE_SORTS:
        # NULL (not measured) counts as the largest value on both databases: PostgreSQL's own
        # order, so its (study_id, column, id) index serves both directions
        return column, order.nulls_first() if desc else order.nulls_last()
    return column, order


def page_query(
    study_id: int, flt: EpisodeFilter, sort: str = DEFAULT_SORT, after: Cursor | None = None
) -> Select[Any]:
    """The sorted select of the matching episodes: page it with ``after`` (keyset: the rows
    after that one, an index range on PostgreSQL however deep) or offset/limit."""
    column, order = _order(sort)
    query = filtered(study_id, flt)
    if column is Participant.external_id:
        query = query.outerjoin(Participant, Episode.participant_id == Participant.id)
    desc = sort.startswith("-")
    if after is not None:
        query = query.where(_after(column, desc, after))
    tie = Episode.id.desc() if desc else Episode.id.asc()
    return query.order_by(order, tie)


def count_matching(
    db: Session, study_id: int, flt: EpisodeFilter, cap: int | None = None
) -> tuple[int, bool]:
    """How many of the study's episodes match ``flt``, and whether that is exact: with
    ``cap``, counting stops past ``cap`` matches (``(cap, False)``): the count of 100,000
    matching rows would cost more than the page itself."""
    ids = filtered(study_id, flt).with_only_columns(Episode.id, maintain_column_froms=True)
    if cap is not None:
        ids = ids.limit(cap + 1)
    n = int(db.scalar(select(func.count()).select_from(ids.subquery())) or 0)
    if cap is not None and n > cap:
        return cap, False
    return n, True


def list_episodes(
    db: Session,
    study: Study,
    flt: EpisodeFilter,
    *,
    sort: str = DEFAULT_SORT,
    offset: int = 0,
    limit: int = 50,
    after: str | None = None,
    count_cap: int | None = COUNT_CAP,
    count: bool = True,
) -> EpisodePage:
    """One page of the study's episodes matching ``flt``, sorted by ``sort``: at ``offset``,
    or after the row a ``next_cursor`` names (``after``); without ``count``, ``total`` is
    None (a client paging on keeps the total of the first page)."""
    cursor = decode_cursor(after, sort) if after else None
    query = page_query(study.id, flt, sort, cursor)
    total: int | None = None
    exact = True
    if count:
        total, exact = count_matching(db, study.id, flt, count_cap)
    limit = min(limit, MAX_PAGE)
    rows = list(
        db.scalars(
            query.options(selectinload(Episode.tags))
            .offset(0 if cursor else offset)
            .limit(limit + 1)
        ).all()
    )
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = encode_cursor(rows[-1], sort) if more and rows and sort_has_cursor(sort) else None
    return EpisodePage(
        items=rows, total=total, offset=offset, limit=limit, total_exact=exact, next_cursor=nxt
    )


# --- keyset cursors -------------------------------------------------------------------------
@dataclass(frozen=True)
class Cursor:
    """The sort value and id of the last row of a page."""

    value: Any
    id: str


def sort_has_cursor(sort: str) -> bool:
    """Keyset paging works on the episode's own columns (not the participant's id)."""
    return SORTS.get(sort.removeprefix("-")) is not Participant.external_id


def encode_cursor(episode: Episode, sort: str) -> str:
    """An opaque cursor naming ``episode``'s place in ``sort`` order."""
    value = getattr(episode, sort.removeprefix("-"))
    if isinstance(value, datetime):
        value = value.isoformat()
    raw = json.dumps({"s": sort, "v": value, "id": episode.id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _bad_cursor() -> Invalid:
    return Invalid(
        "The page cursor is not valid for this sort; start from the first page.",
        detail=[{"loc": ["query", "after"], "msg": "bad cursor"}],
    )


def decode_cursor(text: str, sort: str) -> Cursor:
    """A cursor from :func:`encode_cursor` for the same sort; 422 otherwise."""
    if not sort_has_cursor(sort):
        raise _bad_cursor()
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        value, episode_id = data["v"], data["id"]
        if data["s"] != sort or not isinstance(episode_id, str) or len(episode_id) > 32:
            raise ValueError("another sort")
        key = sort.removeprefix("-")
        if value is not None:
            if key in ("started_at", "ended_at"):
                value = datetime.fromisoformat(value)
            elif isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError("wrong type")
            elif isinstance(value, str) != (key in ("status", "env_key")):
                raise ValueError("wrong type")
    except (ValueError, KeyError, TypeError):
        raise _bad_cursor() from None
    return Cursor(value=value, id=episode_id)


def _after(column: Any, desc: bool, cursor: Cursor) -> Any:
    """Rows after the cursor's in (column, id) order, NULL counting as the largest value (as
    :func:`_order`): row-value comparisons, so PostgreSQL seeks its (study_id, column, id)
    index."""
    pair = tuple_(column, Episode.id)
    if desc:  # NULLs first, then values descending
        if cursor.value is None:
            return or_(and_(column.is_(None), Episode.id < cursor.id), column.is_not(None))
        return pair < tuple_(literal(cursor.value, column.type), literal(cursor.id))
    if cursor.value is None:  # ascending: values, then NULLs
        return and_(column.is_(None), Episode.id > cursor.id)
    after = pair > tuple_(literal(cursor.value, column.type), literal(cursor.id))
    return or_(after, column.is_(None)) if column.nullable else after


def external_ids(db: Session, episodes: Sequence[Episode]) -> dict[int, str]:
    """Participant id -> external id for the given episodes."""
    ids = {e.participant_id for e in episodes if e.participant_id is not None}
    if not ids:
        return {}
    rows = db.execute(
        select(Participant.id, Participant.external_id).where(Participant.id.in_(ids))
    )
    return {int(pid): str(ext) for pid, ext in rows.tuples()}


def get_episode(db: Session, principal: Principal, episode_id: str) -> Episode:
    """An episode of a study the principal manages; 404 otherwise."""
    return studies.get_in_study(db, principal, Episode, episode_id, "episode")


def log_dir(episode: Episode, data_root: Path) -> Path:
    """The episode's log folder, refused (400) when it is not inside the data root."""
    root = Path(data_root).resolve()
    path = Path(episode.storage_path).resolve()
    if not episode.storage_path or not path.is_relative_to(root):
        raise DomainError("The episode's log is not inside the data root.")
    return path
