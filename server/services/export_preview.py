"""What an export would write of the episodes a list shows, and why it leaves the others
out (the rules of :mod:`server.services.counts`), before the export starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Episode, Study
from server.schemas import EpisodeFilterIn, ExportSelection
from server.services import review
from server.services.counts import left_out_reason
from server.services.exports import selection_filter

_LISTED_IDS = 10  # episode ids given per reason


def export_preview(
    db: Session, study: Study, listed: EpisodeFilterIn | Sequence[str], sel: ExportSelection
) -> dict[str, Any]:
    """Of the episodes the list shows (its filter, or checked ids), how many ``sel`` exports
    and, per reason, the ones it leaves out."""
    columns = select(Episode.id, Episode.status, Episode.excluded, Episode.is_test)
    if isinstance(listed, EpisodeFilterIn):
        query = review.filtered(study.id, selection_filter(listed)).with_only_columns(
            Episode.id, Episode.status, Episode.excluded, Episode.is_test
        )
    else:
        query = columns.where(Episode.study_id == study.id, Episode.id.in_(list(listed)))
    reasons: dict[str, list[str]] = {}
    exported = total = 0
    for episode_id, status, excluded, is_test in db.execute(query):
        total += 1
        reason = left_out_reason(str(status), bool(excluded), bool(is_test), sel)
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
