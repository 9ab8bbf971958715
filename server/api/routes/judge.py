"""A feedback study's judge: the next item, its clips' frames (a whole clip in one answer,
or one frame) and the answer (docs/feedback.md). Every call takes the play ticket in the
``X-Play-Ticket`` header, as the participant's other calls do; a judgement's token reaches
only the participant it was given to (any other reads as absent)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from fastapi import Path as Path_
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.api.deps import SessionDep, SettingsDep
from server.api.routes.crowd import CLOSED, state_out, ticket_holder
from server.api.routes.episodes import NOT_FOUND
from server.errors import Conflict, NotFound
from server.models import Judgement, Participant, Study, utcnow
from server.schemas.feedback import JudgeAnswerIn, JudgeClipOut, JudgeItemOut, JudgeNextOut
from server.services.crowd import progress, quotas
from server.services.feedback import clips, judging
from server.services.studies import studies
from server.study_spec import StudySpec
from server.study_spec.feedback import FeedbackSpec

router = APIRouter(tags=["player"])
Ticket = Annotated[str | None, Header()]
Token = Annotated[str, Path_(min_length=1, max_length=64)]
JPEG: dict[int | str, dict[str, Any]] = {**NOT_FOUND, 200: {"content": {"image/jpeg": {}}}}


def _judge(db: Session, settings: Any, ticket: str | None
           ) -> tuple[Study, StudySpec, FeedbackSpec, Participant]:  # fmt: skip
    study, participant = ticket_holder(db, settings, ticket)
    spec = studies.spec_of(study)
    if spec.judging is None:
        raise Conflict("This study asks its participants to play, not to judge.",
                       code="not_feedback")  # fmt: skip
    return study, spec, spec.judging, participant


def _mine(db: Session, study: Study, participant: Participant, token: str) -> Judgement:
    found = db.scalar(select(Judgement).where(
        Judgement.token == token, Judgement.participant_id == participant.id,
        Judgement.study_id == study.id))  # fmt: skip
    if found is None:
        raise NotFound(judging.NOT_YOURS, code="not_assigned")
    return found


def item_out(db: Session, feedback: FeedbackSpec, judgement: Judgement) -> JudgeItemOut:
    item = judgement.item
    question = feedback.question(item.question_key)
    waited = (utcnow() - judgement.assigned_at).total_seconds()
    shown = clips.shown(item, judgement.swapped)
    return JudgeItemOut(
        token=judgement.token,
        question=question.model_dump(),
        clips=[JudgeClipOut(frames=c.frames) for c in shown],
        fps=feedback.fps,
        min_watch_s=feedback.min_watch_s,
        wait_s=round(max(0.0, feedback.min_watch_s - waited), 2),
        number=judging.answered_count(db, judgement.participant_id) + 1,
        of=feedback.judgements_per_participant,
    )


@router.get("/api/play/judge/next", response_model=JudgeNextOut, summary="The next item to judge")
def next_item(db: SessionDep, settings: SettingsDep, x_play_ticket: Ticket = None) -> JudgeNextOut:
    """The participant's open item (the same again after a reload, its watch time counted
    from when it was first given), else a new one; ``item`` null when they are done. 409
    when the study is paused or closed, or consent is still to give."""
    study, spec, feedback, participant = _judge(db, settings, x_play_ticket)
    participant.last_seen_at = utcnow()
    db.commit()
    available = quotas.availability(db, study, spec)
    if available in ("paused", "closed") and not participant.is_test:
        raise Conflict(CLOSED[available], code=available)
    if spec.crowd.consent and participant.consented_at is None:
        raise Conflict("Please read and accept the consent form first.", code="consent")
    judgement = None
    state = progress.state(db, study, spec, participant)
    if not state["done"] and not state["screened_out"]:  # done: completed or full too
        judgement = judging.draw(db, study, feedback, participant)
        if judgement is None:  # nothing left for them: done (the page asks for the code)
            state = {**state, "done": True, "next": {"kind": "done", "env_id": None}}
    item = item_out(db, feedback, judgement) if judgement is not None else None
    return JudgeNextOut(item=item, participant=state)


ClipNumber = Annotated[int, Path_(ge=0, le=1, description="0: the left clip, 1: the right.")]
FRAMES: dict[int | str, dict[str, Any]] = {**NOT_FOUND, 200: {
    "content": {"application/octet-stream": {}},
    "headers": {"X-Frame-Sizes": {"schema": {"type": "string"}, "description":
                "The frames' byte lengths in order, comma-separated (0: a step recorded "
                "without a frame)."}},
}}  # fmt: skip
PRIVATE = {"Cache-Control": "private, max-age=3600"}


def _shown_clip(db: Session, settings: Any, ticket: str | None, token: str, clip: int
                ) -> tuple[FeedbackSpec, clips.Clip]:  # fmt: skip
    """Clip ``clip`` (left 0, right 1) of the participant's own judgement ``token``."""
    study, _, feedback, participant = _judge(db, settings, ticket)
    judgement = _mine(db, study, participant, token)
    shown = clips.shown(judgement.item, judgement.swapped)
    if clip >= len(shown):
        raise NotFound("This item has one clip.")
    return feedback, shown[clip]


@router.get(
    "/api/play/judge/{token}/clips/{clip}", response_class=Response,
    summary="Every frame of an item's clip in one answer", responses=FRAMES,
)  # fmt: skip
def clip_frames(
    token: Token, clip: ClipNumber, request: Request, db: SessionDep, settings: SettingsDep,
    x_play_ticket: Ticket = None,
) -> Response:  # fmt: skip
    """The left (0) or right (1) clip of the participant's item: its frames' JPEGs one after
    another (``application/octet-stream``), their byte lengths in the ``X-Frame-Sizes``
    header. Frame ``i`` is the same bytes as ``.../frames/{i}`` answers; a length of 0 is a
    step recorded without a frame (that route's 404). 404 as that route."""
    feedback, shown = _shown_clip(db, settings, x_play_ticket, token, clip)
    jpegs = clips.every_frame(db, request.app.state.replay_cache, settings.data_root, feedback,
                              shown)  # fmt: skip
    sizes = ",".join(str(len(j)) for j in jpegs)
    return Response(b"".join(jpegs), media_type="application/octet-stream",
                    headers={**PRIVATE, "X-Frame-Sizes": sizes})  # fmt: skip


@router.get(
    "/api/play/judge/{token}/clips/{clip}/frames/{index}", response_class=Response,
    summary="A frame of an item's clip (JPEG)", responses=JPEG,
)  # fmt: skip
def clip_frame(
    token: Token, clip: ClipNumber,
    index: Annotated[int, Path_(ge=0, le=clips.MAX_FRAMES - 1)], request: Request,
    db: SessionDep, settings: SettingsDep, x_play_ticket: Ticket = None,
) -> Response:  # fmt: skip
    """Frame ``index`` of the left (0) or right (1) clip of the participant's item (a whole
    clip in one answer: ``.../clips/{clip}``)."""
    feedback, shown = _shown_clip(db, settings, x_play_ticket, token, clip)
    jpeg = clips.frame(db, request.app.state.replay_cache, settings.data_root, feedback,
                       shown, index)  # fmt: skip
    return Response(jpeg, media_type="image/jpeg", headers=PRIVATE)


@router.post(
    "/api/play/judge/{token}/answer", summary="Answer the item", responses=NOT_FOUND,
)  # fmt: skip
def answer(
    token: Token, body: JudgeAnswerIn, db: SessionDep, settings: SettingsDep,
    x_play_ticket: Ticket = None,
    x_browser_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:  # fmt: skip
    """Record the answer once: 404 ``not_assigned``; 409 ``already_answered``,
    ``study_closed``, ``not_taking_part``, ``item_withdrawn`` or ``too_fast`` (with
    ``detail.retry_after_s``); 422 naming the field. Returns ParticipantState (a gold answer
    that screens the participant out says so only by ``screened_out``, as any screening)."""
    study, spec, feedback, participant = _judge(db, settings, x_play_ticket)
    given = judging.Answer(choice=body.choice, rating=body.rating, text=body.text)
    judging.answer(db, study, feedback, participant, token, given)
    db.refresh(participant)
    return state_out(db, study, participant, x_browser_key)
