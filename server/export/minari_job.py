"""The Minari format's export loop (the on-disk format is in :mod:`minari_format`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from server.export import minari_format
from server.export.episode import EnvSpecs, RldsEpisode
from server.export.export_job import (
    CancelFn,
    EpisodeInput,
    ExportFormat,
    ExportOptions,
    ExportResult,
    ProgressFn,
    for_each_episode,
)
from server.export.tags import tag_columns


def write_minari(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    specs: EnvSpecs,
    tag_names: Sequence[str],
    tmp: Path,
    progress: ProgressFn | None,
    cancel: CancelFn | None,
) -> ExportResult:
    """Write the episodes as a Minari dataset into ``tmp`` (see minari_format)."""
    spaces = minari_format.check_specs(specs)
    dataset = minari_format.dataset_id(options.name, options.version)
    data_dir = tmp / dataset / "data"
    data_dir.mkdir(parents=True)
    transitions = 0

    def write(i: int, ep: EpisodeInput, episode: RldsEpisode) -> None:
        nonlocal transitions
        columns = tag_columns(ep.step_tags, tag_names, len(episode))
        fields = [
            ("episode_id", ep.episode_id),
            ("agent_id", ep.agent_id),
            ("status", ep.status),
            ("tags", list(ep.tags)),
            ("notes", ep.notes),
            *ep.outcome_fields().items(),
        ]
        meta = minari_format.episode_metadata(episode.log_metadata, fields)
        transitions += minari_format.write_episode(
            data_dir, i, episode, meta, columns, options.keep_step_metadata
        )

    summaries = for_each_episode(episodes, options, write, progress, cancel)
    minari_format.write_dataset_metadata(
        data_dir,
        dataset=dataset,
        spaces=spaces,
        total_episodes=len(episodes),
        total_steps=transitions,
        description=options.description or f"RLDS Studio export of study {options.study}",
    )
    return ExportResult(
        path=tmp, format=ExportFormat.MINARI, episodes=tuple(summaries), data_dir=data_dir
    )
