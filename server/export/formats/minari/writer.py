"""The Minari format's writer: one Arrow file per episode and the dataset's metadata (the
on-disk format is in :mod:`server.export.formats.minari.dataset`)."""

from __future__ import annotations

import pyarrow as pa

from server.export.base import EpisodeInput, ExportResult
from server.export.episode import RldsEpisode
from server.export.fields import NARRATION_FIELD
from server.export.formats.minari import dataset as minari_format
from server.export.loop import WriteJob
from server.export.tags import tag_columns


def write_minari(job: WriteJob) -> ExportResult:
    """Write the episodes as a Minari dataset into ``job.out``."""
    options, tag_names = job.options, job.tag_names
    spaces = minari_format.check_specs(job.specs)
    dataset = minari_format.dataset_id(options.name, options.version)
    data_dir = job.out / dataset / "data"
    data_dir.mkdir(parents=True)
    transitions = 0

    def encode(ep: EpisodeInput, episode: RldsEpisode) -> pa.RecordBatch:
        n = len(episode)
        columns = tag_columns(ep.step_tags, tag_names, n)
        language = {
            "language_instruction": [ep.instruction] * n,
            NARRATION_FIELD: ep.narration_column(n),
        }
        return minari_format.episode_batch(episode, columns, options.keep_step_metadata, language)

    def write(i: int, ep: EpisodeInput, episode: RldsEpisode, batch: pa.RecordBatch) -> None:
        nonlocal transitions
        fields = [
            ("episode_id", ep.episode_id),
            ("agent_id", ep.agent_id),
            ("status", ep.status),
            ("tags", list(ep.tags)),
            ("notes", ep.notes),
            *ep.outcome_fields().items(),
            *ep.replay_fields().items(),
            *ep.task_fields().items(),
            *ep.ending_fields(episode).items(),
            *ep.judgement_fields().items(),
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
        path=job.out, format=options.format, episodes=tuple(summaries), data_dir=data_dir
    )
