"""The Minari format (the on-disk format is in :mod:`server.export.formats.minari.dataset`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from server.export.base import ExportOptions, ExportResult
from server.export.card import ExportedEpisode
from server.export.episode import EnvSpecs
from server.export.fields import ENDING_TEXT
from server.export.judgements import FIELDS_TEXT
from server.export.loop import WriteJob
from server.export.registry import Format, register


def split_name(options: ExportOptions, split: str) -> str:
    """The name of one split's Minari dataset in a dataset's export: ``<name>-<split>`` (its
    id ``<name>-<split>-v<major>``, which Minari reads as dataset ``<name>-<split>``)."""
    return f"{options.name}-{split}"


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
        from server.export.formats.minari.dataset import check_specs  # imports pyarrow

        check_specs(specs, bounds=False)

    def write(self, job: WriteJob) -> ExportResult:
        from server.export.formats.minari.writer import write_minari  # imports pyarrow

        if not job.splits:
            return write_minari(job)
        # a dataset's export: one Minari dataset per split, side by side (split_id)
        episodes: list[ExportedEpisode] = []
        for split, part in job.parts():
            named = replace(part, options=replace(job.options, name=split_name(job.options, split)))
            episodes += write_minari(named).episodes
        return ExportResult(path=job.out, format=self.name, episodes=tuple(episodes))

    def split_loading(self, options: ExportOptions, splits: Sequence[str]) -> str:
        ids = {s: self.data_path(replace(options, name=split_name(options, s))) for s in splits}
        lines = "".join(f'{s} = minari.load_dataset("{ids[s]}")\n' for s in splits)
        return (
            "\nOne Minari dataset per split, side by side in this folder (ids"
            f" `{options.name}-<split>-v<major>`):\n\n```python\n{lines}```\n"
        )

    def data_path(self, options: ExportOptions) -> str:
        from server.export.formats.minari.dataset import dataset_id

        return dataset_id(options.name, options.version)

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
            "metadata, `tag:<name>` columns, `language_instruction` and `narration` (text) are\n"
            "in `episode.infos` (one value per observation).\n"
            "Episode metadata (`episode_id`, `agent_id`, `status`, `tags`, `notes`, `outcome`,\n"
            "`player_outcome`, `reviewer_outcome`, `replay_verdict`, `replay_step` (RLDS step,"
            " -1: none),\n"
            "`replay_message`, `task_id`, `language_instruction`, `env_id`, `env_config`,"
            f" `seed`, and what feedback studies' judgements say of it: {FIELDS_TEXT};"
            f" how it ended: {ENDING_TEXT}):"
            " `dataset.storage.get_episode_metadata([i])`.\n"
        )
