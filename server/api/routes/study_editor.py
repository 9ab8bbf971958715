"""What the study editor asks while a designer edits: YAML <-> form data, Markdown
previews, validation of a study not saved yet, and a preview of one of its tasks."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field, model_validator

from server.api.deps import BudgetDep, CurrentUser, SessionDep, SettingsDep
from server.api.routes.studies import TOO_LARGE, YAML_BODY, AllowedDep, StudyFileBody
from server.errors import Invalid
from server.player.views import render_markdown
from server.schemas.studies import StudyCreate, StudyValidationPublic
from server.services.studies import env_validation, feedback_check, study_files
from server.services.studies.env_check import require_allowed
from server.study_spec import EnvironmentSpec, StrictModel, StudySpec
from server.study_spec.base import reject_control_chars
from server.study_spec.environments import SLUG

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
    user: CurrentUser, body: StudyCreate, settings: SettingsDep, allowed: AllowedDep,
    budget: BudgetDep, db: SessionDep,
) -> dict[str, Any]:  # fmt: skip
    """As ``POST /api/studies/{id}/validate``, for the editor's current study (unsaved),
    with its pre-launch checklist (``checklist``; a feedback study's source counts only
    the caller's own studies)."""
    require_allowed(body.spec, allowed, with_settings=False)  # bad settings are in the report
    reports = env_validation.validate_study(body.spec, settings, allowed, budget=budget)
    checklist = feedback_check.checklist(db, body.spec, reports, user.id)
    return {"ok": all(r["ok"] for r in reports), "environments": reports, "checklist": checklist}


class TaskPreviewIn(StrictModel):
    _no_control = model_validator(mode="before")(reject_control_chars)

    environment: EnvironmentSpec = Field(description="The environment as the editor holds it.")
    task: str = Field(pattern=SLUG, description="The id of the task to preview.")
    index: int = Field(
        default=0, ge=0, le=49, description="The environment's place in the study (for locs)."
    )


class TaskPreviewOut(StrictModel):
    ok: bool = Field(description="The environment built with the task's settings and reset.")
    frame_url: str | None = Field(description="The task's first frame (JPEG), when it built.")
    problems: list[dict[str, Any]] = Field(
        description="Why it did not build (field paths from the study's root)."
    )
    cached: bool = Field(description="Served from the validation cache, no worker started.")


def _task_loc(loc: list[Any], index: int, t: int, settings: dict[str, Any]) -> list[Any]:
    """An environment-relative loc, from the study's root: a setting the task sets is the
    task's (``tasks.t.settings.name``), not the source's."""
    if loc[:2] == ["source", "kwargs"] and len(loc) == 3 and loc[2] in settings:
        loc = ["tasks", t, "settings", loc[2]]
    return ["spec", "environments", index, *loc]


@router.post(
    "/studies/tasks/preview",
    response_model=TaskPreviewOut,
    summary="Build one task of an environment not saved yet and show its first frame",
    responses={
        422: {
            "description": "A setting the task's environment does not accept (the field's "
            "path: spec.environments.N.tasks.M.settings.name), an unknown task, or an "
            "environment this server does not allow."
        },  # fmt: skip
        503: {"description": "Too many environments building now: retry later."},
    },
)
def preview_task(
    _user: CurrentUser, body: TaskPreviewIn, settings: SettingsDep, allowed: AllowedDep,
    budget: BudgetDep,
) -> dict[str, Any]:  # fmt: skip
    """Builds the environment as an episode of the task gets it (the task's settings merged
    over the source's kwargs, reset with the task's first seed, else the environment's) in
    a worker, as Validate does: the same allow-list and settings checks, the same queue and
    cache. The frame is served at ``frame_url``."""
    env = body.environment
    try:
        task = env.task(body.task)
    except KeyError:
        raise Invalid(
            f"The environment has no task {body.task!r}.",
            detail=[{"loc": ["task"], "msg": f"no task {body.task!r}", "type": "value_error"}],
        ) from None
    t = env.tasks.index(task)
    try:
        require_allowed(StudySpec(name="preview", environments=[env]), allowed)
    except Invalid as exc:  # at this environment's place in the editor's study
        for item in exc.detail or []:
            item["loc"][2] = body.index
        raise
    (report,) = env_validation.validate_environments(
        [env.for_task(task)], settings, allowed, budget
    )
    problems = [
        {**p, "loc": _task_loc(p["loc"], body.index, t, task.settings)} for p in report["problems"]
    ]
    return {
        "ok": not problems, "frame_url": report["frame_url"], "problems": problems,
        "cached": report["cached"],
    }  # fmt: skip


@router.post("/markdown", response_model=MarkdownOut, summary="Preview Markdown")
def preview_markdown(_user: CurrentUser, body: MarkdownIn) -> dict[str, str]:
    """Renders Markdown as the participants' pages do (CommonMark, HTML not rendered)."""
    return {"html": render_markdown(body.text)}
