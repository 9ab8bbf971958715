"""One definition of each count the pages and the API show.

A *test play* is an episode a designer (or admin) played, or played while previewing the study
as a participant: every count of participants' work leaves it out. The *test participant* a
preview makes is in no participants list or count either (``REAL_PARTICIPANT``). An
*excluded* episode is marked to stay out of exports. A *rejected* episode ended and its player
declined to save it. A participant is *screened out* once they declined consent (the
platform's screen-out code). The live dashboard, the participants page, the episodes list and
the export use these, and the export preview (:mod:`server.services.exports.preview`) says,
for each listed episode an export leaves out, which rule it is.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement

from server.models import Episode, EpisodeStatus, Participant
from server.schemas.exports import ExportSelection

TEST_PLAY: ColumnElement[bool] = Episode.is_test.is_(True)
PARTICIPANT_PLAY: ColumnElement[bool] = Episode.is_test.is_(False)
SCREENED_OUT: ColumnElement[bool] = Participant.screened_out_at.is_not(None)
REAL_PARTICIPANT: ColumnElement[bool] = Participant.is_test.is_(False)


def left_out_reason(
    status: str, excluded: bool, is_test: bool, sel: ExportSelection, replay_verdict: str = ""
) -> str | None:
    """Why an export of ``sel`` leaves out an episode the list shows (None: it exports it)."""
    if status == EpisodeStatus.recording:
        return "still recording"
    if sel.episode_ids is None and status not in {str(s) for s in sel.statuses}:
        wanted = ", ".join(str(s) for s in sel.statuses)
        return f"{status}: only {wanted} episodes are exported (choose statuses to change it)"
    if excluded and not sel.include_excluded:
        return "excluded from exports (tick “Include excluded episodes” to export them)"
    if is_test and sel.episode_ids is None and not sel.include_tests:
        return "test play (show test plays to export them)"
    verdicts = sel.replay_verdicts
    if sel.episode_ids is None and verdicts and replay_verdict not in verdicts:
        wanted = ", ".join(v.replace("_", " ") for v in verdicts)
        return f"replay {replay_verdict.replace('_', ' ')}: only {wanted} episodes are exported"
    return None
