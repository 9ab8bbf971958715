"""Narrations: a reviewer's words for a range of an episode's steps (list, add, edit, delete,
the study's JSON export and import), and the participant's form for their own saved episode
(``/api/play/episodes/...``, with the play ticket in ``X-Play-Ticket``): docs/review.md,
"Narration", and docs/protocol.md, "Narrating one's own episode"."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi import Path as Path_
from sqlalchemy.orm import Session

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.api.routes.crowd import ticket_holder
from server.api.routes.episodes import NOT_FOUND
from server.api.routes.replay import JPEG, _jpeg
from server.core.config import Settings
from server.errors import Conflict, NotFound
from server.models import MAX_DB_INT, Episode, EpisodeStatus, Narration
from server.schemas.narrations import (
    NarrationEditIn,
    NarrationImportOut,
    NarrationIn,
    NarrationPublic,
    NarrationRow,
    PlayNarrationOut,
)
from server.services.review import narrations, replay, review
from server.services.studies import studies

router = APIRouter(tags=["episodes"])

STALE: dict[int | str, dict[str, Any]] = {
    409: {"description": "The version is not the narration's any more: someone changed it "
          "meanwhile (``detail.current`` is the narration as it is now)."},
}  # fmt: skip
BAD_STEPS: dict[int | str, dict[str, Any]] = {
    422: {"description": "Steps outside the episode's 0..steps-1 or out of order, or a bad "
          "text (the field is named)."},
}  # fmt: skip
NOT_YOURS = "No such episode of yours."


def _out(db: Session, items: list[Narration]) -> list[NarrationPublic]:
    emails = narrations.authors(db, items)
    return [NarrationPublic(**narrations.public(n, emails)) for n in items]


# --- a reviewer's ---------------------------------------------------------------------------
@router.get(
    "/api/episodes/{episode_id}/narrations",
    response_model=list[NarrationPublic],
    summary="List an episode's narrations",
    responses=NOT_FOUND,
)
def list_narrations(
    episode_id: str, db: SessionDep, principal: CurrentPrincipal
) -> list[NarrationPublic]:
    """Every narration of the episode (reviewers' and the participant's), in step order."""
    episode = review.get_episode(db, principal, episode_id)
    return _out(db, narrations.list_of(db, episode))


@router.post(
    "/api/episodes/{episode_id}/narrations",
    response_model=NarrationPublic,
    status_code=201,
    summary="Narrate a range of steps",
    responses={**NOT_FOUND, **BAD_STEPS},
)
def add_narration(
    episode_id: str, body: NarrationIn, db: SessionDep, principal: CurrentPrincipal
) -> NarrationPublic:
    """What happened over steps ``start_step..end_step`` (inclusive, within 0..steps-1)."""
    episode = review.get_episode(db, principal, episode_id)
    narration = narrations.add(
        db, episode, body.start_step, body.end_step, body.text, author_id=principal.user_id
    )
    return _out(db, [narration])[0]


@router.patch(
    "/api/episodes/{episode_id}/narrations/{narration_id}",
    response_model=NarrationPublic,
    summary="Edit a narration (the version read)",
    responses={**NOT_FOUND, **STALE, **BAD_STEPS},
)
def edit_narration(
    episode_id: str,
    narration_id: RowId,
    body: NarrationEditIn,
    db: SessionDep,
    principal: CurrentPrincipal,
) -> NarrationPublic:
    """Change its text and/or steps; applied only if it is still at ``version`` (else 409),
    which then goes up by one."""
    episode = review.get_episode(db, principal, episode_id)
    narration = narrations.edit(
        db, episode, narration_id, body.version,
        text=body.text, start=body.start_step, end=body.end_step,
    )  # fmt: skip
    return _out(db, [narration])[0]


@router.delete(
    "/api/episodes/{episode_id}/narrations/{narration_id}",
    status_code=204,
    summary="Delete a narration (the version read)",
    responses={**NOT_FOUND, **STALE},
)
def delete_narration(
    episode_id: str,
    narration_id: RowId,
    db: SessionDep,
    principal: CurrentPrincipal,
    version: Annotated[int, Query(ge=1, le=MAX_DB_INT, description="The version read")],
) -> Response:
    """Delete it if it is still at ``version`` (else 409: it was edited meanwhile)."""
    episode = review.get_episode(db, principal, episode_id)
    narrations.remove(db, episode, narration_id, version)
    return Response(status_code=204)


@router.get(
    "/api/studies/{study_id}/narrations",
    response_model=list[NarrationRow],
    summary="Download a study's narrations (JSON)",
    responses={**NOT_FOUND, 200: {"content": {"application/json": {}}}},
)
def export_narrations(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """Every narration of the study's episodes as a JSON list of ``{episode_id, start_step,
    end_step, text, author, by_participant, created_at, updated_at}`` (an attachment); the
    import takes the same list back."""
    study = studies.get_study(db, principal, study_id)
    rows = [NarrationRow(**r).model_dump(mode="json") for r in narrations.export_rows(db, study)]
    return Response(
        json.dumps(rows, ensure_ascii=False, indent=1),
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="narrations-study-{study.id}.json"',
            "Cache-Control": "private, no-store",
        },
    )


@router.post(
    "/api/studies/{study_id}/narrations/import",
    response_model=NarrationImportOut,
    summary="Import narrations (the export's JSON)",
    responses={
        **NOT_FOUND,
        422: {"description": "Nothing imported: each bad row with its index and field."},
    },
)
def import_narrations(
    study_id: RowId,
    rows: Annotated[list[NarrationRow], Body(max_length=narrations.MAX_IMPORT)],
    db: SessionDep,
    principal: CurrentPrincipal,
) -> NarrationImportOut:
    """All or nothing: every row must name an episode of this study, steps inside it and a
    text of 1..1000 characters; at most 10,000 rows. Rows
    identical to a narration already there (episode, steps, text) are skipped. ``author`` is
    matched to a user by email, else the importer is the author."""
    study = studies.get_study(db, principal, study_id)
    done = narrations.import_rows(
        db, study, [narrations.ImportRow(**r.model_dump()) for r in rows], principal.user_id
    )
    return NarrationImportOut(imported=done.imported, skipped=done.skipped)


# --- the participant's own ------------------------------------------------------------------
def _own_episode(
    db: Session, settings: Settings, ticket: str | None, episode_id: str
) -> tuple[Episode, int]:
    """The ticket holder's saved episode (and their id), in a study that asks for narration:
    404 when it is not theirs, 409 when the study does not ask or it is not completed."""
    study, participant = ticket_holder(db, settings, ticket)
    episode = db.get(Episode, episode_id)
    if episode is None or episode.study_id != study.id or episode.participant_id != participant.id:
        raise NotFound(NOT_YOURS)
    if not studies.spec_of(study).narrate_episodes:
        raise Conflict("This study does not ask you to narrate episodes.", code="not_narrated")
    if episode.status != EpisodeStatus.completed:
        raise Conflict(
            "Only a saved (completed) episode can be narrated.", code="episode_not_completed"
        )
    return episode, participant.id


TicketHeader = Annotated[str | None, Header(description="The play ticket of /api/play/join")]
PLAY: dict[int | str, dict[str, Any]] = {
    401: {"description": "No valid play ticket."},
    404: {"description": "No such episode of the ticket's participant."},
    409: {"description": "The study does not ask for narration, or the episode is not saved."},
}


@router.get(
    "/api/play/episodes/{episode_id}/narration",
    response_model=PlayNarrationOut,
    tags=["player"],
    summary="A participant's saved episode, to narrate",
    responses=PLAY,
)
def play_narration(
    episode_id: str, db: SessionDep, settings: SettingsDep, x_play_ticket: TicketHeader = None
) -> PlayNarrationOut:
    """Its steps, its task instruction and the participant's own narrations of it."""
    episode, participant_id = _own_episode(db, settings, x_play_ticket, episode_id)
    own = narrations.list_of(db, episode, participant_id=participant_id)
    return PlayNarrationOut(
        episode_id=episode.id, steps=episode.steps, instruction=episode.instruction,
        narrations=_out(db, own),
    )  # fmt: skip


@router.get(
    "/api/play/episodes/{episode_id}/frames/{step}",
    response_class=Response,
    tags=["player"],
    summary="A frame of a participant's saved episode (JPEG)",
    responses={**PLAY, 200: JPEG[200]},
)
def play_frame(
    episode_id: str,
    step: Annotated[int, Path_(ge=0, le=MAX_DB_INT)],
    request: Request,
    db: SessionDep,
    settings: SettingsDep,
    x_play_ticket: TicketHeader = None,
) -> Response:
    """The JPEG the participant saw at RLDS step ``step`` (404 past the last step)."""
    episode, _ = _own_episode(db, settings, x_play_ticket, episode_id)
    log = review.log_dir(episode, settings.data_root)
    cache: replay.ReaderCache = request.app.state.replay_cache
    return _jpeg(episode, replay.frame(cache, log, step, (episode.status, episode.steps)))


@router.post(
    "/api/play/episodes/{episode_id}/narrations",
    response_model=NarrationPublic,
    status_code=201,
    tags=["player"],
    summary="Narrate a range of steps of one's own saved episode",
    responses={**PLAY, **BAD_STEPS},
)
def play_add_narration(
    episode_id: str,
    body: NarrationIn,
    db: SessionDep,
    settings: SettingsDep,
    x_play_ticket: TicketHeader = None,
) -> NarrationPublic:
    """The participant's words for steps ``start_step..end_step`` (their ``participant_id``
    set, no author); at most 50 per episode, then 409."""
    episode, participant_id = _own_episode(db, settings, x_play_ticket, episode_id)
    narration = narrations.add_by_participant(
        db, episode, participant_id, body.start_step, body.end_step, body.text
    )
    return _out(db, [narration])[0]
