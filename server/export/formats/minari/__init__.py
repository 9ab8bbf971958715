"""The Minari format (the on-disk format is in :mod:`server.export.formats.minari.dataset`)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from server.export.base import (
    EpisodeInput,
    ExportOptions,
    ExportResult,
    WriteJob,
)
from server.export.episode import EnvSpecs, RldsEpisode
from server.export.formats.minari import dataset as minari_format
from server.export.registry import Format, register
from server.export.tags import tag_columns


@register
class Minari(Format):
    name = "minari"
    summary = "Minari (arrow)"
    position = 2
    # frames are JPEGs of varying size: Minari's infos hold fixed columns only
    card_metadata = (
        "step metadata (raw input, timing, env info, control, camera; not the frame) in `infos`"
    )
    card_tags = "step tag infos"

    def check(self, specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> None:
        minari_format.check_specs(specs, bounds=False)

    def write(self, job: WriteJob) -> ExportResult:
        """Write the episodes as a Minari dataset into ``job.out`` (see minari_format)."""
        options, tag_names = job.options, job.tag_names
        spaces = minari_format.check_specs(job.specs)
        dataset = minari_format.dataset_id(options.name, options.version)
        data_dir = job.out / dataset / "data"
        data_dir.mkdir(parents=True)
        transitions = 0

        def encode(ep: EpisodeInput, episode: RldsEpisode) -> pa.RecordBatch:
            columns = tag_columns(ep.step_tags, tag_names, len(episode))
            return minari_format.episode_batch(episode, columns, options.keep_step_metadata)

        def write(i: int, ep: EpisodeInput, episode: RldsEpisode, batch: pa.RecordBatch) -> None:
            nonlocal transitions
            fields = [
                ("episode_id", ep.episode_id),
                ("agent_id", ep.agent_id),
                ("status", ep.status),
                ("tags", list(ep.tags)),
                ("notes", ep.notes),
                *ep.outcome_fields().items(),
            ]
            meta = minari_format.episode_metadata(episode.log_metadata, fields)
            transitions += minari_format.write_batch(data_dir, i, batch, meta)

        summaries = job.each_encoded(encode, write)
        minari_format.write_dataset_metadata(
            data_dir,
            dataset=dataset,
            spaces=spaces,
            total_episodes=len(job.episodes),
            total_steps=transitions,
            description=options.description or f"RLDS Studio export of study {options.study}",
        )
        return ExportResult(
            path=job.out, format=self.name, episodes=tuple(summaries), data_dir=data_dir
        )

    def data_path(self, options: ExportOptions) -> str:
        return minari_format.dataset_id(options.name, options.version)

    def loading(self, data_path: str) -> str:
        return (
            "```python\n"
            "import os\n"
            'os.environ["MINARI_DATASETS_PATH"] = "<this folder>"  # before importing minari\n'
            "import minari\n"
            f'dataset = minari.load_dataset("{data_path}")\n'
            "for episode in dataset.iterate_episodes():\n"
            "    episode.observations, episode.actions, episode.rewards, episode.infos\n"
            "```\n\n"
            "Minari's arrow storage (`minari[arrow]`, tested with minari 0.5.4). An episode of n\n"
            "observations holds n - 1 actions, rewards, terminations and truncations; step\n"
            "metadata and `tag:<name>` columns are in `episode.infos` (one value per"
            " observation).\n"
            "Episode metadata (`episode_id`, `agent_id`, `status`, `tags`, `notes`, `outcome`,\n"
            "`player_outcome`, `reviewer_outcome`, `env_id`,\n"
            "`env_config`, `seed`): `dataset.storage.get_episode_metadata([i])`.\n"
        )
