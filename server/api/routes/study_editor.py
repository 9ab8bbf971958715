"""What the study editor asks while a designer edits: YAML <-> form data, Markdown
previews, and validation of a study not saved yet."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from server.api.deps import BudgetDep, CurrentUser, SettingsDep
from server.api.routes.studies import TOO_LARGE, YAML_BODY, AllowedDep, StudyFileBody
from server.player.views import render_markdown
from server.schemas.studies import StudyCreate, StudyValidationPublic
from server.services.studies import env_validation, launch_check, study_files
from server.services.studies.env_check import require_allowed
from server.study_spec import StrictModel

router = APIRouter(prefix="/api", tags=["study editor"])


class StudyFileOut(StrictModel):
    spec: dict[str, Any] = Field(
        description="The values the file sets (a value equal to its default included)."
    )


class FormData(StrictModel):
    spec: dict[str, Any] = Field(description="The editor's study: the values the designer set.")


class RenderedFile(StrictModel):
    yaml: str
    problems: list[dict[str, Any]] = Field(
        description="Why the study is not valid yet (field paths from its root); empty if valid."
    )


class MarkdownIn(StrictModel):
    text: str = Field(max_length=50_000)


class MarkdownOut(StrictModel):
    html: str = Field(description="As participants see it: raw HTML is shown as text.")


@router.post(
    "/studies/yaml/parse",
    response_model=StudyFileOut,
    summary="Read a study file into the editor's form data",
    openapi_extra=YAML_BODY,
    responses={**TOO_LARGE, 422: {"description": "Invalid YAML or spec, with the field path."}},
)
def parse_study_file(_user: CurrentUser, body: StudyFileBody) -> dict[str, Any]:
    """The study of a YAML file as JSON, with exactly the values the file sets.

    The same safe, bounded loader as import; nothing is stored.
    """
    return {"spec": study_files.spec_data(study_files.load_bytes(body))}


@router.post("/studies/yaml/render", response_model=RenderedFile, summary="Write a study file")
def render_study_file(_user: CurrentUser, body: FormData) -> dict[str, Any]:
    """The YAML text of the editor's form data, as export writes it; nothing is stored.

    A study that is not valid yet is written as given, its problems listed apart.
    """
    text, problems = study_files.render_form(body.spec)
    return {"yaml": text, "problems": problems}


@router.post(
    "/studies/validate",
    response_model=StudyValidationPublic,
    summary="Build each environment of a study not saved yet",
)
def validate_unsaved(
    _user: CurrentUser, body: StudyCreate, settings: SettingsDep, allowed: AllowedDep,
    budget: BudgetDep,
) -> dict[str, Any]:  # fmt: skip
    """As ``POST /api/studies/{id}/validate``, for the editor's current study (unsaved),
    with its pre-launch checklist (``checklist``)."""
    require_allowed(body.spec, allowed, with_settings=False)  # bad settings are in the report
    reports = env_validation.validate_study(body.spec, settings, allowed, budget=budget)
    checklist = launch_check.checklist(body.spec, reports)
    return {"ok": all(r["ok"] for r in reports), "environments": reports, "checklist": checklist}


@router.post("/markdown", response_model=MarkdownOut, summary="Preview Markdown")
def preview_markdown(_user: CurrentUser, body: MarkdownIn) -> dict[str, str]:
    """Renders Markdown as the participants' pages do (CommonMark, HTML not rendered)."""
    return {"html": render_markdown(body.text)}
