"""Can a study's environments be built on this machine? (asks the runtime's catalog)."""

from __future__ import annotations

from server.study_spec import StudySpec


def validate_study_environments(spec: StudySpec) -> list[dict]:
    """Problems as ``[{"loc": [...], "msg": ...}]``; empty when every environment can run."""
    from server.runtime.catalog import validate_environment  # the runtime is imported lazily

    problems = []
    for index, env in enumerate(spec.environments):
        for message in validate_environment(env):
            problems.append(
                {"loc": ["spec", "environments", index, "source"], "msg": message, "type": "env"}
            )
    return problems
