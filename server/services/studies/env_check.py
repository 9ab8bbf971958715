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
            for t, task in enumerate(env.tasks):  # a task's settings, over the source's
                merged = {**env.source.kwargs, **task.settings}
                problems += [
                    (("tasks", t, "settings", name), message)
                    for name, message in settings_problems(
                        merged, entry.schema, fixed=entry.kwargs
                    )  # fmt: skip
                    if name in task.settings
                ]
        detail += _detail(index, problems, prefix)
    if detail:
        raise Invalid(
            "The study uses environments this server does not allow, or settings they do "
            "not accept.",
            detail=detail,
        )
