"""A feedback study's results for its designer: the preference dataset's downloads and the
study's feedback figures (docs/feedback.md). Only designers who manage the study (its owner,
or an admin) read them; a play study answers 409 ``not_feedback``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy.orm import Session

from server.api.deps import CurrentPrincipal, RowId, SessionDep
from server.errors import Conflict
from server.models import Study
from server.principal import Principal
from server.schemas.feedback_results import FeedbackFiguresOut
from server.services.feedback import dataset, summary
from server.services.studies import studies
from server.study_spec.feedback import FeedbackSpec

router = APIRouter(tags=["feedback"])
REFUSED: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such study, or not yours."},
    409: {"description": "A play study (code not_feedback): it has no judgements."},
}
MEDIA = {dataset.JSONL: "application/x-ndjson", dataset.PARQUET: "application/vnd.apache.parquet"}


def _feedback_study(db: Session, principal: Principal, study_id: int) -> tuple[Study, FeedbackSpec]:
    study = studies.get_study(db, principal, study_id)
    judging = studies.spec_of(study).judging
    if judging is None:
        raise Conflict("This is a play study: its participants play, they make no judgements.",
                       code="not_feedback")  # fmt: skip
    return study, judging


@router.get("/api/studies/{study_id}/feedback", response_model=FeedbackFiguresOut,
            summary="A feedback study's figures", responses=REFUSED)  # fmt: skip
def figures(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> dict[str, Any]:
    """Source episodes in the pool, items made and judgements answered per question (gold
    apart), the quota, agreement and its pairs, judgements per minute over the last ten
    minutes, judges joined, active, completed and screened out by gold (real participants;
    the preference dataset has every judgement)."""
    study, judging = _feedback_study(db, principal, study_id)
    return summary.figures(db, study, judging)


def _download(db: Session, principal: Principal, study_id: int, name: str) -> Response:
    study, judging = _feedback_study(db, principal, study_id)
    body = summary.preference_file(db, study, judging, name)
    filename = f"study-{study.id}-{name}"
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(body, media_type=MEDIA[name], headers=headers)


@router.get(
    "/api/studies/{study_id}/feedback/preferences.jsonl", response_class=Response,
    summary="The preference dataset as JSON Lines",
    responses={**REFUSED, 200: {"content": {MEDIA[dataset.JSONL]: {}}}},
)  # fmt: skip
def preferences_jsonl(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """Every answered judgement, one JSON object a line, in the preference dataset's schema
    (docs/feedback.md): ``pandas.read_json(path, lines=True)`` loads it."""
    return _download(db, principal, study_id, dataset.JSONL)


@router.get(
    "/api/studies/{study_id}/feedback/preferences.parquet", response_class=Response,
    summary="The preference dataset as Parquet",
    responses={**REFUSED, 200: {"content": {MEDIA[dataset.PARQUET]: {}}}},
)  # fmt: skip
def preferences_parquet(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """The same rows as Parquet (the Arrow types of ``dataset.SCHEMA``):
    ``pandas.read_parquet(path)`` loads it."""
    return _download(db, principal, study_id, dataset.PARQUET)
