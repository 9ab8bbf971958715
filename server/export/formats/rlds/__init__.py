"""The RLDS format (``tfds`` in the API): a TFDS dataset (``<name>/<version>``: shards,
dataset_info.json, features.json), written here or, with ``ExportOptions.beam``, by a Beam
pipeline (server/export/formats/rlds/beam.py, which writes the same files); its Open
X-Embodiment profile is in server/export/formats/rlds/oxe.py."""

from __future__ import annotations

from collections.abc import Sequence

from server.export.base import (
    EpisodeInput,
    ExportOptions,
    ExportResult,
    WriteJob,
)
from server.export.card import option_lines
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
from server.export.registry import Format, register


@register
class Rlds(Format):
    name = "tfds"
    label = "rlds"
    summary = "RLDS"
    position = 0
    card_metadata = "step metadata (frame JPEG, raw input, timing, env info, control, camera)"
    card_tags = "step tag fields"
    on_beam = True
    profiles = {"oxe": "the Open X-Embodiment profile"}

    def write(self, job: WriteJob) -> ExportResult:
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

        def write(_i: int, _ep: EpisodeInput, _e: RldsEpisode, encoded: EncodedEpisode) -> None:
            writer.add(encoded.record)  # in order: the shards are as one at a time
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
            format=self.name,
            episodes=tuple(summaries),
            data_dir=written.data_dir,
            shard_paths=tuple(written.shard_paths),
        )

    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        oxe_lines = [
            "Open X-Embodiment profile: `language_instruction` on every step, dict"
            " observations (`observation/image` or `observation/state`), episode fields"
            " under `episode_metadata`, statistics in `dataset_statistics.json` beside the"
            " shards"
        ]
        return option_lines(
            options,
            tag_names,
            metadata=self.card_metadata,
            tags=self.card_tags,
            extra=oxe_lines if options.profile == "oxe" else (),
        )

    def loading(self, data_path: str) -> str:
        return (
            "```python\n"
            "import tensorflow_datasets as tfds\n"
            f'ds = tfds.builder_from_directory("{data_path}").as_dataset(split="train")\n'
            "```\n\n"
            "Each element is an episode: its metadata (`episode_id`, `agent_id`, `study_id`,\n"
            "`env_id`, `env_config`, `seed`, `status`, `tags`, `notes`, `outcome`,\n"
            "`player_outcome`, `reviewer_outcome`) and `steps`, a nested\n"
            "dataset of RLDS steps (`observation`, `action`, `reward`, `discount`, `is_first`,\n"
            "`is_last`, `is_terminal`, and the step metadata and `tag:<name>` fields when\n"
            "exported). The `rlds` library's transformations apply directly.\n"
        )
