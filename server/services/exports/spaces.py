"""Whether an export's environments share their observation and action spaces (the export
preview, :mod:`server.services.exports.preview`, says what the export does when they do not)."""

from __future__ import annotations

from server.export import (
    EpisodeInput,
    ExportError,
    IncompatibleEnvironmentsError,
    check_compatible,
)
from server.models import Episode


def one_log_per_env(episodes: list[Episode], inputs: list[EpisodeInput]) -> dict[str, EpisodeInput]:
    """The first episode of each environment (its log stands for the environment's spaces)."""
    one_per_env: dict[str, EpisodeInput] = {}
    for row, ep in zip(episodes, inputs, strict=True):
        one_per_env.setdefault(row.env_key, ep)
    return one_per_env


def spaces_differ(episodes: list[Episode], inputs: list[EpisodeInput]) -> bool:
    """True when two environments of the selection have different spaces (a missing or
    unreadable log is not a difference: checking the inputs names it)."""
    one_per_env = one_log_per_env(episodes, inputs)
    if len(one_per_env) < 2 or not all(ep.log_dir.is_dir() for ep in one_per_env.values()):
        return False
    try:
        check_compatible(list(one_per_env.values()))
    except IncompatibleEnvironmentsError:
        return True
    except ExportError:
        return False
    return False
