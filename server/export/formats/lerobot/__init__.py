"""The LeRobot format: a LeRobot v3.0 dataset, parquet data and lossless H.264 videos (its
writer: :mod:`server.export.formats.lerobot.writer`; the on-disk format:
:mod:`server.export.formats.lerobot.dataset`)."""

from __future__ import annotations

from collections.abc import Sequence

from server.export.base import ExportOptions, ExportResult
from server.export.episode import EnvSpecs
from server.export.fields import ENDING_TEXT
from server.export.judgements import FIELDS_TEXT
from server.export.loop import WriteJob
from server.export.registry import Format, register

REPO_PREFIX = "rlds-studio"


@register
class LeRobot(Format):
    name = "lerobot"
    summary = "LeRobot v3.0 (parquet + lossless H.264 videos)"
    position = 3
    card_metadata = (
        "step metadata (raw input, timing, env info, control, camera as columns;"
        " the player's frames as the video `observation.images.frame`)"
    )
    card_tags = "step tag columns"

    def check(self, specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> None:
        from server.export.formats.lerobot.dataset import features_of  # imports pyarrow

        features_of(specs, keep_step_metadata=options.keep_step_metadata, tag_names=tag_names)

    def write(self, job: WriteJob) -> ExportResult:
        from server.export.formats.lerobot.writer import write_lerobot  # imports PyAV, pyarrow

        return write_lerobot(job)

    def data_path(self, options: ExportOptions) -> str:
        return options.name

    def split_loading(self, options: ExportOptions, splits: Sequence[str]) -> str:
        names = ", ".join(f"`{s}`" for s in splits)
        path = self.data_path(options)
        return (
            f"\nThe dataset's splits are {names}: episodes are written train first, then"
            " validation, then test, and `meta/info.json`'s `splits` gives each one's episode"
            ' index range ("from:to", LeRobot\'s convention):\n\n'
            "```python\n"
            f'start, end = map(int, dataset.meta.info["splits"]["{splits[-1]}"].split(":"))\n'
            f'part = LeRobotDataset("{REPO_PREFIX}/{path}", root="<this folder>/{path}",\n'
            '                       episodes=list(range(start, end)), video_backend="pyav")\n'
            "```\n"
        )

    def loading(self, data_path: str) -> str:
        return (
            "```python\n"
            "import os\n"
            'os.environ["HF_HUB_OFFLINE"] = "1"  # a local dataset: nothing is downloaded\n'
            "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n\n"
            f'dataset = LeRobotDataset("{REPO_PREFIX}/{data_path}",'
            f' root="<this folder>/{data_path}",\n'
            '                         video_backend="pyav")\n'
            "step = dataset[0]  # observation.*, action, next.reward, ..., task, subtask\n"
            "```\n\n"
            "LeRobot v3.0 (tested with lerobot 0.4.4). Videos are lossless H.264 (decoded"
            " frames\n"
            "equal the recorded ones); `timestamp` is each step's recorded time. Episode"
            " metadata\n"
            "(`episode_id`, `agent_id`, `status`, `outcome`, `episode_tags`, `notes`, `env_id`,"
            "\n"
            "`seed`, `replay_verdict`, `replay_step` (a `frame_index`, -1: none),"
            " `replay_message`,\n"
            "`task_id`, `language_instruction`, and what feedback studies' judgements say of it:\n"
            f"{FIELDS_TEXT};"
            f" how it ended: {ENDING_TEXT}): `dataset.meta.episodes[i]`. Each frame's `task`"
            " is its\n"
            'episode\'s instruction (`meta/tasks.parquet`); its `narration` (text, "" when none)'
            " is also\n"
            "its `subtask` (`subtask_index` into `meta/subtasks.parquet`).\n"
        )
