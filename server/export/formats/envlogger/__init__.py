"""The envlogger output format: each selected episode's Riegeli log, copied as recorded.

Layout: ``<out>/episodes/<episode_id>/`` holds the log files (readable with
``envlogger.Reader``) and ``tags.json`` with the episode's database-side metadata. End tags
do not cut the logs (they are copied whole).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from server.export.base import EpisodeInput, ExportOptions, ExportResult
from server.export.card import ExportedEpisode
from server.export.episode import RldsEpisode
from server.export.fields import ENDING_TEXT
from server.export.judgements import FIELDS_TEXT, JudgementSummary
from server.export.loop import WriteJob
from server.export.narration import NarratedSpan
from server.export.registry import Format, register
from server.export.tags import TaggedSpan

EPISODES_SUBDIR = "episodes"
TAGS_FILE = "tags.json"


def tags_document(
    *,
    episode_id: str,
    agent_id: str,
    status: str,
    tags: Sequence[str],
    step_tags: Sequence[TaggedSpan],
    notes: str,
    outcomes: dict[str, str] | None = None,
    replay: dict[str, str | int] | None = None,
    task: dict[str, str] | None = None,
    narrations: Sequence[NarratedSpan] = (),
    judgements: dict[str, Any] | None = None,
    ending: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The content of an episode's ``tags.json`` (step ranges are inclusive step indices,
    of the RLDS steps: the logs are dm_env timesteps, see the card)."""
    return {
        "episode_id": episode_id,
        "agent_id": agent_id,
        "status": status,
        "tags": list(tags),
        "step_tags": [{"name": t.name, "start": t.start, "end": t.end} for t in step_tags],
        "notes": notes,
        **(outcomes or {}),
        **(replay or {}),
        **(task or {"task_id": "", "language_instruction": ""}),
        "narrations": [{"start": n.start, "end": n.end, "text": n.text} for n in narrations],
        **(judgements or JudgementSummary().fields()),
        **(ending or {"ended_by": "", "env_outcome": ""}),
    }


def copy_episode_log(log_dir: Path, out_root: Path, episode_id: str, doc: dict[str, Any]) -> Path:
    """Copy one episode's log folder under ``out_root`` and write its ``tags.json``."""
    dest = Path(out_root) / EPISODES_SUBDIR / episode_id
    shutil.copytree(log_dir, dest)
    (dest / TAGS_FILE).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return dest


@register
class Envlogger(Format):
    name = "envlogger"
    summary = "the logs"
    position = 1
    splits_by_env = True  # it only copies logs: nothing forces them into one dataset
    applies_trims = False  # the logs are copied as recorded: a dataset's trim cannot apply

    def write(self, job: WriteJob) -> ExportResult:
        if not job.splits:
            return self._write(job)
        # a dataset's export: a folder per split, <split>/episodes/<episode_id>/
        episodes: list[ExportedEpisode] = []
        for split, part in job.parts():
            episodes += self._write(replace(part, out=job.out / split)).episodes
        return ExportResult(path=job.out, format=self.name, episodes=tuple(episodes))

    def split_loading(self, options: ExportOptions, splits: Sequence[str]) -> str:
        names = ", ".join(f"`{s}/`" for s in splits)
        return (
            f"\nOne folder per split ({names}): a split's episodes are"
            " `<split>/episodes/<episode_id>/`, e.g."
            f' `envlogger.Reader("{splits[-1]}/episodes/<episode_id>")`.\n'
        )

    def _write(self, job: WriteJob) -> ExportResult:
        def write(_i: int, ep: EpisodeInput, episode: RldsEpisode) -> None:
            # the episode was read all the same: it validates the log and gives the totals
            doc = tags_document(
                episode_id=ep.episode_id,
                agent_id=ep.agent_id,
                status=ep.status,
                tags=ep.tags,
                step_tags=ep.step_tags,
                notes=ep.notes,
                outcomes=ep.outcome_fields(),
                replay=ep.replay_fields(),
                task=ep.task_fields(),
                narrations=ep.narrations,
                judgements=ep.judgement_fields(),
                ending=ep.ending_fields(episode),
            )
            copy_episode_log(ep.log_dir, job.out, ep.episode_id, doc)

        summaries = job.each_episode(write, cut=False)
        return ExportResult(path=job.out, format=self.name, episodes=tuple(summaries))

    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        return [
            "logs copied as recorded (step tags, notes, the task and the narrations in each"
            " tags.json)"
        ]

    def loading(self, data_path: str) -> str:
        return (
            "```python\n"
            "import envlogger\n"
            'with envlogger.Reader("episodes/<episode_id>") as reader:\n'
            "    for step in reader.steps:  # dm_env timesteps, actions and step metadata\n"
            "        ...\n"
            "```\n\n"
            "Under numpy 2, envlogger 1.2 needs `numpy.unicode_ = numpy.str_` before reading.\n"
            "Each episode folder is the episode's envlogger (Riegeli) log as recorded, plus a\n"
            "`tags.json` with its database-side metadata (agent, status, tags, step tags, notes,\n"
            "outcomes, the replay check's `replay_verdict`, `replay_step` (an RLDS step, -1:\n"
            "none) and `replay_message`, the episode's `task_id` and `language_instruction`,\n"
            "its `narrations`: `start`, `end` (inclusive RLDS steps) and `text`, and what\n"
            f"feedback studies' judgements say of it: {FIELDS_TEXT};"
            f" how it ended: {ENDING_TEXT}).\n"
            "Steps are dm_env timesteps: action a_t, reward and discount are stored with o_{t+1}.\n"
        )
