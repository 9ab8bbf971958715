"""Can a study's environments run here, and are they ones the operator allows?

Problems are ``[{"loc": [...], "msg": ..., "type": "env"}]`` with the field path from the
spec's root (``prefix`` first: ``("spec",)`` for a JSON body, ``()`` for a study file).
The runtime is imported lazily: the app imports it only when a study is checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.core.config import Settings
from server.errors import Invalid
from server.study_spec import StudySpec

if TYPE_CHECKING:
    from server.core.budget import ProcessBudget
    from server.runtime.allowlist import AllowedEnvironments, Problem

Loc = tuple[str | int, ...]


def allowed_environments(settings: Settings) -> AllowedEnvironments:
    """The allow-list of ``settings`` (reads installed packages' metadata: not on the loop)."""
    from server.runtime.allowlist import AllowedEnvironments

    return AllowedEnvironments.from_settings(settings)


def _detail(index: int, problems: list[Problem], prefix: Loc) -> list[dict]:
    return [
        {"loc": [*prefix, "environments", index, *loc], "msg": msg, "type": "env"}
        for loc, msg in problems
    ]


def require_allowed(
    spec: StudySpec,
    allowed: AllowedEnvironments,
    prefix: Loc = ("spec",),
    *,
    with_settings: bool = True,
) -> None:
    """Raise :class:`Invalid` (422) if an environment's source is not allowed, or (with
    ``with_settings``) a setting is outside the catalog's schema for it
    (``…source.kwargs.<name>``, with the values or range it accepts). Imports nothing."""
    from server.runtime.catalog import find_entry, settings_problems

    detail = []
    for index, env in enumerate(spec.environments):
        problems = allowed.source_problems(env.source)
        entry = None if problems else find_entry(env.source)
        if entry is not None and with_settings:
            problems = [
                (("source", "kwargs", name), message)
                for name, message in settings_problems(
                    env.source.kwargs, entry.schema, fixed=entry.kwargs
                )
            ]
        detail += _detail(index, problems, prefix)
    if detail:
        raise Invalid(
            "The study uses environments this server does not allow, or settings they do "
            "not accept.",
            detail=detail,
        )


def validate_study_environments(
    spec: StudySpec,
    settings: Settings,
    allowed: AllowedEnvironments | None = None,
    prefix: Loc = ("spec",),
    budget: ProcessBudget | None = None,
) -> list[dict]:
    """Every problem that stops the study from running; empty when each environment runs.

    Checks the allow-list, suites, catalog settings and controls' presence in this process,
    then builds each remaining environment in a worker (bad kwargs, controls that fit no
    action), or reuses its cached validation (:mod:`server.services.studies.env_validation`).
    Blocks for as long as the workers take: call it off the event loop.
    """
    from server.services.studies.env_validation import validate_study

    allowed = allowed or allowed_environments(settings)
    problems = [
        {**problem, "type": "env"}
        for report in validate_study(spec, settings, allowed, prefix, budget)
        for problem in report["problems"]
    ]
    # per environment, the source's problems first
    problems.sort(key=lambda p: (p["loc"][len(prefix) + 1], p["loc"][len(prefix) + 2] != "source"))
    return problems
