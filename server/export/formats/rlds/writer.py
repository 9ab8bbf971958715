"""The RLDS format's writer: the episodes encoded in threads into the TFDS dataset's shards
(or, with ``ExportOptions.beam``, by the Beam pipeline of server/export/formats/rlds/beam.py)."""

from __future__ import annotations

from server.export.base import EpisodeInput, ExportResult
from server.export.episode import RldsEpisode
from server.export.formats.rlds import oxe
from server.export.formats.rlds.encoding import (
    EncodedEpisode,
    dataset_info_fields,
    encode_episode,
    rlds_features,
)
from server.export.formats.rlds.example import EpisodeSerializer
from server.export.formats.rlds.tfds_writer import DatasetWriter
from server.export.loop import WriteJob


def write_rlds(job: WriteJob) -> ExportResult:
    """Write the job's episodes as a TFDS dataset into ``job.out``."""
    options, tag_names, out = job.options, job.tag_names, job.out
    if options.beam is not None:
        from server.export.formats.rlds.beam import write_rlds_beam  # imports apache_beam

        return write_rlds_beam(
            job.episodes, options, job.reference, tag_names, out, job.progress, job.cancel
        )
    features = rlds_features(job.specs, options, tag_names)
    stats = oxe.Statistics()
    serializer = EpisodeSerializer(features)
    writer = DatasetWriter(
        out,
        features=features,
        **dataset_info_fields(options),
        max_shard_bytes=options.max_shard_bytes,
        max_episodes_per_shard=options.max_episodes_per_shard,
    )

    def encode(ep: EpisodeInput, episode: RldsEpisode) -> EncodedEpisode:
        return encode_episode(ep, episode, options, tag_names, serializer)  # in a thread

    def write(_i: int, ep: EpisodeInput, _e: RldsEpisode, encoded: EncodedEpisode) -> None:
        writer.add(encoded.record, ep.split_name)  # in order: the shards are as one at a time
        if encoded.statistics is not None:
            stats.add(encoded.statistics)

    try:
        summaries = job.each_encoded(encode, write)
        written = writer.finish()
        if options.profile == "oxe":
            stats.write(written.data_dir)
    finally:
        writer.close()
    return ExportResult(
        path=out,
        format=options.format,
        episodes=tuple(summaries),
        data_dir=written.data_dir,
        shard_paths=tuple(written.shard_paths),
    )
