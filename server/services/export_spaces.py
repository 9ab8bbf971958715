"""Whether an export's environments share their observation and action spaces, and what the
export does when they do not. The export dialog asks this with the preview before it starts,
so a mixed selection is offered one dataset per environment without a failing request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from server.errors import Invalid
from server.export import (
    EpisodeInput,
    ExportError,
    ExportFormat,
    IncompatibleEnvironmentsError,
    check_compatible,
)
from server.models import Episode, Study
from server.schemas import ExportOptionsIn, ExportSelection


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


def _answer(split: str, envs: list[str], message: str = "") -> dict[str, Any]:
    return {"mixed": split != "none", "environments": envs, "split": split, "message": message}


def spaces_preview(
    db: Session, study: Study, selection: ExportSelection, opts: ExportOptionsIn, *,
    secret_key: str, data_root: Path,
) -> dict[str, Any]:  # fmt: skip
    """``split``: ``none`` (one dataset holds the selection), ``automatic`` (envlogger writes
    one folder per environment anyway), ``offer`` (one dataset per environment works: the
    dialog offers it, ``split_by_env``) or ``impossible`` (not even per environment in this
    format); ``message`` says so in words. A selection the export itself would refuse (empty,
    a bad name) answers ``none``: starting the export names the problem."""
    from server.services import exports

    try:
        episodes = exports.resolve(db, study, selection)
        options = exports.library_options(study, opts)
    except Invalid:
        return _answer("none", [])
    inputs = exports.episode_inputs(db, episodes, secret_key, data_root)
    envs = sorted({e.env_key for e in episodes})
    if not spaces_differ(episodes, inputs):
        return _answer("none", envs)
    differ = f"The environments {', '.join(envs)} have different observation or action spaces"
    if options.format is ExportFormat.ENVLOGGER:
        return _answer("automatic", envs, f"{differ}: the envlogger export writes one folder "
                       "per environment.")  # fmt: skip
    try:
        exports.check_inputs(episodes, inputs, options, split_by_env=True)
    except Invalid as exc:
        return _answer("impossible", envs, f"{differ}, and the {opts.format} format cannot "
                       f"write them even as one dataset per environment ({exc.message}) Select "
                       "one environment's episodes (filter by environment).")  # fmt: skip
    return _answer("offer", envs, f"{differ}, which one dataset cannot hold: the export can "
                   "write one dataset per environment, in the same download.")  # fmt: skip
