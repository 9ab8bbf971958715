"""The RLDS format (``tfds`` in the API): a TFDS dataset (``<name>/<version>``: shards,
dataset_info.json, features.json), written here or, with ``ExportOptions.beam``, by a Beam
pipeline (server/export/formats/rlds/beam.py, which writes the same files); its Open
X-Embodiment profile is in server/export/formats/rlds/oxe.py."""

from __future__ import annotations

from collections.abc import Sequence

from server.export.base import ExportOptions, ExportResult
from server.export.card import option_lines
from server.export.fields import ENDING_TEXT
from server.export.judgements import FIELDS_TEXT
from server.export.loop import WriteJob
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
        from server.export.formats.rlds.writer import write_rlds  # imports TFDS

        return write_rlds(job)

    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        oxe_lines = [
            "Open X-Embodiment profile: `language_instruction` on every step (the episode's"
            " task's instruction, else the environment's), dict"
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

    def split_loading(self, options: ExportOptions, splits: Sequence[str]) -> str:
        path = self.data_path(options)
        names = ", ".join(f"`{s}`" for s in splits)
        lines = "".join(f'{s} = builder.as_dataset(split="{s}")\n' for s in splits)
        return (
            f"\nThe dataset's splits are {names} (each its own shards,"
            f" `{options.name}-<split>.tfrecord-*`):\n\n"
            "```python\n"
            f'builder = tfds.builder_from_directory("{path}")\n'
            f"{lines}"
            "builder.info.splits  # each split's episodes and shards\n"
            "```\n"
        )

    def loading(self, data_path: str) -> str:
        return (
            "```python\n"
            "import tensorflow_datasets as tfds\n"
            f'ds = tfds.builder_from_directory("{data_path}").as_dataset(split="train")\n'
            "```\n\n"
            "Each element is an episode: its metadata (`episode_id`, `agent_id`, `study_id`,\n"
            "`env_id`, `env_config`, `seed`, `status`, `tags`, `notes`, `outcome`,\n"
            "`player_outcome`, `reviewer_outcome`, `replay_verdict`, `replay_step` (RLDS step,\n"
            "-1: none), `replay_message`, `task_id` and `language_instruction` (the task's\n"
            "instruction, else the environment's; \"\" when none), and what feedback studies'\n"
            f"judgements say of it: {FIELDS_TEXT};"
            f" how it ended: {ENDING_TEXT}) and `steps`, a nested\n"
            "dataset of RLDS steps (`observation`, `action`, `reward`, `discount`, `is_first`,\n"
            "`is_last`, `is_terminal`, `narration` (the narrations covering the step, joined\n"
            'with " | " in start order; "" when none), and the step metadata and\n'
            "`tag:<name>` fields when exported). The `rlds` library's transformations apply\n"
            "directly.\n"
        )
