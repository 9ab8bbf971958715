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


def require_allowed(spec: StudySpec, allowed: AllowedEnvironments, prefix: Loc = ("spec",)) -> None:
    """Raise :class:`Invalid` (422) if an environment's source is not allowed (no imports)."""
    detail = [
        item
        for index, env in enumerate(spec.environments)
        for item in _detail(index, allowed.source_problems(env.source), prefix)
    ]
    if detail:
        raise Invalid("The study uses environments this server does not allow.", detail=detail)


def validate_study_environments(
    spec: StudySpec,
    settings: Settings,
    allowed: AllowedEnvironments | None = None,
    prefix: Loc = ("spec",),
) -> list[dict]:
    """Every problem that stops the study from running; empty when each environment runs.

    Checks the allow-list, suites, catalog settings and controls' presence in this process,
    then builds each remaining environment in a worker (bad kwargs, controls that fit no
    action). Blocks for as long as the workers take: call it off the event loop.
    """
    from server.runtime.catalog import validate_environment
    from server.runtime.probe import probe_all

    allowed = allowed or allowed_environments(settings)
    problems: list[dict] = []
    to_probe = []
    for index, env in enumerate(spec.environments):
        found = validate_environment(env, allowed)
        problems += _detail(index, found, prefix)
        # Build it unless it may not be built (or its settings are already known bad); an
        # env without controls is still built: an unknown id is the first thing to fix.
        if all(loc == ("controls",) for loc, _ in found):
            to_probe.append((index, env))
    if to_probe:
        results = probe_all(
            [env for _, env in to_probe], allowed,
            data_root=settings.data_root, timeout=settings.worker_start_timeout_s,
        )  # fmt: skip
        for (index, _), found in zip(to_probe, results, strict=True):
            problems += _detail(index, found, prefix)
    # per environment, the source's problems first
    problems.sort(key=lambda p: (p["loc"][len(prefix) + 1], p["loc"][len(prefix) + 2] != "source"))
    return problems
