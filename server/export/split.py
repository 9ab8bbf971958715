"""One dataset per environment: a selection whose environments have different spaces.

A TFDS (or Minari) dataset has one feature structure, so episodes of environments with
different observation or action spaces cannot share one. With ``split_by_env`` the export
writes one complete dataset per environment, named ``<name>_<env>``, side by side in one
output folder (one job, one download, one progress bar); see docs/export.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from server.export.base import CancelFn, EpisodeInput, ExportOptions, ProgressFn
from server.export.errors import ExportError
from server.export.packaging import staged
from server.export.run import export_dataset


def env_dataset_name(name: str, env_key: str) -> str:
    """The dataset name of one environment's part: ``<name>_<env key in snake_case>``."""
    return f"{name}_{re.sub(r'[^a-z0-9_]', '_', env_key.lower())}"


def group_by_env(
    episodes: Sequence[EpisodeInput], env_keys: Sequence[str]
) -> dict[str, list[EpisodeInput]]:
    """The episodes per environment key, environments in order of first appearance."""
    if len(episodes) != len(env_keys):
        raise ExportError("one environment key per episode is needed to split by environment")
    groups: dict[str, list[EpisodeInput]] = {}
    for ep, key in zip(episodes, env_keys, strict=True):
        groups.setdefault(key, []).append(ep)
    return groups


def export_split(
    episodes: Sequence[EpisodeInput],
    env_keys: Sequence[str],
    options: ExportOptions,
    out_dir: Path,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> Path:
    """Export each environment's episodes as its own dataset under the new folder ``out_dir``.

    All or nothing, like :func:`export_dataset`: built in a hidden sibling, renamed at the end.
    """
    if Path(out_dir).exists():  # before the checks
        raise ExportError(f"the output folder {out_dir} already exists")
    groups = group_by_env(episodes, env_keys)
    names = {env: env_dataset_name(options.name, env) for env in groups}
    if len(set(names.values())) != len(names):
        raise ExportError("two environments' keys give the same dataset name")
    total = len(episodes)
    done = steps = 0
    with staged(out_dir, "split") as tmp:
        for env, part in groups.items():

            def report(d: int, _t: int, s: int, base: tuple[int, int] = (done, steps)) -> None:
                if progress is not None:
                    progress(base[0] + d, total, base[1] + s)

            sub = replace(options, name=names[env])
            result = export_dataset(part, sub, tmp / names[env], report, cancel)
            done += len(part)
            steps += result.num_steps
    return Path(out_dir)
