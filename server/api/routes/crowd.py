"""Crowd participants: a permalink's preview, joining from Prolific / MTurk / a typed id,
consent, completion; and the designer's participants list (``docs/protocol.md``).

Participant endpoints after ``join`` take the play ticket in the ``X-Play-Ticket`` header
(never in the URL, like the WebSocket's). Codes go only to the browser that holds the
participant's browser key (``browser_key`` in ``join``'s body, else ``X-Browser-Key``): it is
handed out at the first join and to the browser that finishes the study; the id alone is not
enough.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Response
from sqlalchemy.orm import Session

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep, WarmDep
from server.core.config import Settings
from server.errors import Conflict, NotFound, Unauthorized
from server.models import Participant, ScreenoutReason, Study, utcnow
from server.player import tickets
from server.player.env_link import prewarm_from_request
from server.player.protocol import PROTOCOL_VERSION
from server.player.views import study_view
from server.principal import Principal
from server.schemas.crowd import (
    ConsentIn,
    JoinIn,
    ParticipantRow,
    PlayerStudyOut,
    PreviewAsIn,
    PreviewIn,
    PreviewOut,
)
from server.services.crowd import episodes, participants, progress, quotas
from server.services.studies import studies

router = APIRouter(tags=["player"])

NO_LINK = "This study link is no longer valid."
CLOSED = {
    "paused": "This study is paused at the moment. Please try again later.",
    "closed": "This study has ended and no longer takes participants.",
    "full": "This study is full: it has all the participants it needs. Thank you!",
}
EXPIRED = "Your session has expired or the study link was replaced: open the study link again."


def _study_for(db: Session, token: str) -> Study:
    study = studies.study_by_token(db, token)
    if study is None:
        raise NotFound(NO_LINK)
    return study


def _out(db: Session, settings: Settings, study: Study, participant: Participant,
         key: str | None, preview: bool = False) -> PlayerStudyOut:  # fmt: skip
    """Join's answer; a ``preview``'s browser (the designer's) always gets a new key."""
    spec = studies.spec_of(study)
    held = participants.holds_key(participant, key) and not preview
    issued = None if held else participants.new_key(db, participant, replace=preview)
    reveal = held or issued is not None
    principal = Principal.for_participant(study.id, participant.id, participant.is_test)
    counts = episodes.completed_counts(db, study.id, principal)
    return PlayerStudyOut(
        study=study_view(study.id, spec, counts),
        ticket=tickets.issue(settings.secret_key, study.id, participant.id,
                             tickets.signing_token(study), settings.ticket_ttl_s),
        participant_id=participant.external_id,
        participant=progress.state(db, study, spec, participant, reveal=reveal),
        browser_key=issued,
        protocol=PROTOCOL_VERSION,
    )  # fmt: skip


@router.post("/api/play/preview", response_model=PreviewOut, summary="Look at a study link")
def preview(body: PreviewIn, db: SessionDep) -> PreviewOut:
    """The study behind a permalink and whether it takes participants; creates nobody."""
    study = _study_for(db, body.token)
    spec = studies.spec_of(study)
    return PreviewOut(study=study_view(study.id, spec), state=quotas.availability(db, study, spec))


@router.post(
    "/api/play/join", response_model=PlayerStudyOut, summary="Join a study as a participant"
)
def join(body: JoinIn, db: SessionDep, settings: SettingsDep, warm: WarmDep) -> PlayerStudyOut:
    """Find or create the participant behind a permalink; returns a play ticket and the
    participant's state. A participant who completed gets their code again. The study's
    environments get warm workers from now (docs/runtime.md, "Warm workers")."""
    study = _study_for(db, body.token)
    spec = studies.spec_of(study)
    who = participants.arrival(body.params, body.participant_id, spec.crowd)
    existing = participants.find(db, study.id, who.external_id)
    if existing is None or participants.outcome(existing) not in ("completed", "full"):
        state = quotas.availability(db, study, spec)
        if state in ("paused", "closed") or (state == "full" and existing is None):
            raise Conflict(CLOSED[state], code=state)
    out = _out(db, settings, study, participants.join(db, study, who), body.browser_key)
    prewarm_from_request(warm, spec, settings, study.id)
    return out


def ticket_holder(
    db: Session, settings: Settings, ticket_text: str | None
) -> tuple[Study, Participant]:
    """The study and participant of an ``X-Play-Ticket`` header (401 when not valid: forged,
    expired, or issued under a permalink that has since been rotated)."""
    held = tickets.holder(db, settings.secret_key, ticket_text)
    if held is None:
        raise Unauthorized(EXPIRED)
    study, participant = held
    return study, participant


def state_out(db: Session, study: Study, participant: Participant, key: str | None,
           earned: bool = False) -> dict[str, Any]:  # fmt: skip
    """ParticipantState; its codes only for the key's holder, or for the browser that earned
    them just now (which gets a new key: the codes follow the browser that finished)."""
    participant.last_seen_at = utcnow()
    db.commit()
    issued = participants.new_key(db, participant, replace=True) if earned else None
    reveal = earned or participants.holds_key(participant, key)
    out = progress.state(db, study, studies.spec_of(study), participant, reveal=reveal)
    if issued is not None:
        out["browser_key"] = issued
    return out


@router.get("/api/play/me", summary="Where the participant stands")
def me(
    db: SessionDep, settings: SettingsDep, x_play_ticket: Annotated[str | None, Header()] = None,
    x_browser_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:  # fmt: skip
    """ParticipantState: consent, progress per environment, assignment, completion."""
    study, participant = ticket_holder(db, settings, x_play_ticket)
    return state_out(db, study, participant, x_browser_key)


@router.post("/api/play/consent", summary="Accept or decline the consent form")
def consent(
    body: ConsentIn, db: SessionDep, settings: SettingsDep,
    x_play_ticket: Annotated[str | None, Header()] = None,
    x_browser_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:  # fmt: skip
    """Accepting lets the participant play; declining screens them out (for good), noting
    whether at the consent form or at the device check before it (``at``)."""
    study, participant = ticket_holder(db, settings, x_play_ticket)
    declined = False
    if participants.outcome(participant) is None:
        if body.accept:
            participant.consented_at = participant.consented_at or utcnow()
        else:
            participant.screened_out_at = utcnow()
            participant.screenout_reason = (
                ScreenoutReason.device if body.at == "device" else ScreenoutReason.declined
            )
            declined = True
    return state_out(db, study, participant, x_browser_key, earned=declined)


@router.post("/api/play/complete", summary="Finish the study and get the completion code")
def complete(
    db: SessionDep, settings: SettingsDep, x_play_ticket: Annotated[str | None, Header()] = None,
    x_browser_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:  # fmt: skip
    """ParticipantState with ``completion`` (or ``full_outcome``: code and redirect) for the
    browser that finishes or holds the key; 409 saying what is missing."""
    study, participant = ticket_holder(db, settings, x_play_ticket)
    earned = progress.complete(db, study, studies.spec_of(study), participant)
    return state_out(db, study, participant, x_browser_key, earned=earned)


# -- the designer's side ---------------------------------------------------------------------
@router.post(
    "/api/studies/{study_id}/preview-participant", response_model=PlayerStudyOut,
    tags=["studies"], summary="Preview a study as a participant",
)  # fmt: skip
def preview_as_participant(
    study_id: RowId, body: PreviewAsIn, db: SessionDep, settings: SettingsDep,
    principal: CurrentPrincipal,
) -> PlayerStudyOut:  # fmt: skip
    """Join your own study (any state, a draft too) as a made-up test participant from
    Prolific, MTurk or a direct link: the answer is ``join``'s, and the player then walks the
    participant's screens. Its episodes are test plays; the test participant is in no
    participants list, count or quota, and its codes are the study's, marked TEST."""
    study = studies.get_study(db, principal, study_id)
    who = participants.preview_arrival(body.platform, body.participant_id,
                                       studies.spec_of(study).crowd)  # fmt: skip
    return _out(db, settings, study, participants.join(db, study, who, test=True), None, True)


@router.get(
    "/api/studies/{study_id}/participants", response_model=list[ParticipantRow],
    tags=["studies"], summary="A study's participants",
)  # fmt: skip
def list_participants(
    study_id: RowId, db: SessionDep, principal: CurrentPrincipal
) -> list[dict[str, Any]]:
    """Every participant: platform ids, consent, episodes per status, play time, completion;
    in a feedback study each judge's judgements, gold accuracy and agreement (``judging``)."""
    study = studies.get_study(db, principal, study_id)
    return participants.study_listing(db, study, studies.spec_of(study))


@router.get(
    "/api/studies/{study_id}/participants.csv", tags=["studies"],
    summary="A study's participants as CSV", response_class=Response,
)  # fmt: skip
def participants_csv(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """One row per participant, external id first (approval and bonus uploads); a feedback
    study's has judgements_answered, gold_answered, gold_correct, gold_accuracy and agreement
    instead of the episodes' columns."""
    study = studies.get_study(db, principal, study_id)
    spec = studies.spec_of(study)
    rows = participants.study_listing(db, study, spec)
    text = participants.listing_csv(rows, participants.task_ids(spec), spec.judging is not None)
    name = f"study-{study.id}-participants.csv"
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})  # fmt: skip
