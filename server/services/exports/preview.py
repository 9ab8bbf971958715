"""What an export would write of the episodes a list shows, why it leaves the others out (the
rules of :mod:`server.services.review.counts`), and what it does when their environments' spaces
differ, before the export starts: the dialog asks this first, so a mixed selection is
offered one dataset per environment without a failing request."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import Invalid
from server.export import registry
from server.models import Episode, Study
from server.schemas.episodes import EpisodeFilterIn
from server.schemas.exports import ExportOptionsIn, ExportSelection
from server.services.exports import exports
from server.services.exports import selection as export_selection
from server.services.exports.selection import selection_filter
from server.services.exports.spaces import spaces_differ
from server.services.review import review
from server.services.review.counts import left_out_reason

_LISTED_IDS = 10  # episode ids given per reason


def export_preview(
    db: Session, study: Study, listed: EpisodeFilterIn | Sequence[str], sel: ExportSelection
) -> dict[str, Any]:
    """Of the episodes the list shows (its filter, or checked ids), how many ``sel`` exports
    and, per reason, the ones it leaves out."""
    fields = (Episode.id, Episode.status, Episode.excluded, Episode.is_test, Episode.replay_verdict)
    if isinstance(listed, EpisodeFilterIn):
        query = review.filtered(study.id, selection_filter(listed)).with_only_columns(*fields)
    else:
        query = select(*fields).where(Episode.study_id == study.id, Episode.id.in_(list(listed)))
    reasons: dict[str, list[str]] = {}
    exported = total = 0
    for episode_id, status, excluded, is_test, verdict in db.execute(query):
        total += 1
        reason = left_out_reason(str(status), bool(excluded), bool(is_test), sel, str(verdict))
        if reason is None:
            exported += 1
        else:
            reasons.setdefault(reason, []).append(episode_id)
    return {
        "listed": total,
        "exported": exported,
        "left_out": [
            {"reason": reason, "count": len(ids), "episode_ids": sorted(ids)[:_LISTED_IDS]}
            for reason, ids in sorted(reasons.items(), key=lambda item: -len(item[1]))
        ],
    }


def spaces_preview(
    db: Session, study: Study, selection: ExportSelection, opts: ExportOptionsIn, *,
    secret_key: str, data_root: Path,
) -> dict[str, Any]:  # fmt: skip
    """``split``: ``none`` (one dataset holds the selection), ``automatic`` (the format writes
    one folder per environment anyway, ``Format.splits_by_env``), ``offer`` (one dataset per
    environment works: the dialog offers it, ``split_by_env``) or ``impossible`` (not even
    per environment in this format); ``message`` says so in words. A selection the export
    itself would refuse (empty, a bad name) answers ``none``: starting the export names the
    problem."""
    try:
        episodes = export_selection.resolve(db, study, selection)
        options = exports.library_options(study, opts)
        inputs = export_selection.episode_inputs(db, episodes, secret_key, data_root)
        exports.check(inputs, options)
    except Invalid:
        return _answer("none", [])
    envs = sorted({e.env_key for e in episodes})
    if not spaces_differ(episodes, inputs):
        return _answer("none", envs)
    differ = f"The environments {', '.join(envs)} have different observation or action spaces"
    if registry.get(options.format).splits_by_env:
        return _answer("automatic", envs, f"{differ}: the {options.format} export writes one "
                       "folder per environment.")  # fmt: skip
    try:
        export_selection.check_inputs(episodes, inputs, options, split_by_env=True)
    except Invalid as exc:
        return _answer("impossible", envs, f"{differ}, and the {opts.format} format cannot "
                       f"write them even as one dataset per environment ({exc.message}) Select "
                       "one environment's episodes (filter by environment).")  # fmt: skip
    return _answer("offer", envs, f"{differ}, which one dataset cannot hold: the export can "
                   "write one dataset per environment, in the same download.")  # fmt: skip


def _answer(split: str, envs: list[str], message: str = "") -> dict[str, Any]:
    return {"mixed": split != "none", "environments": envs, "split": split, "message": message}
