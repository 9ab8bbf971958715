"""The dataset card (README.md) written beside every export."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from server.export.judgements import FIELDS_TEXT

if TYPE_CHECKING:
    from server.export.base import ExportOptions


@dataclass(frozen=True)
class ExportedEpisode:
    """What the card (and the job's result) says about one exported episode."""

    episode_id: str
    env_id: str
    status: str
    num_steps: int
    total_reward: float
    terminated: bool
    replay_verdict: str = "pending"  # the replay check's (server/export/base.py EpisodeInput)
    task_id: str = ""  # the task it drew ("": none)
    instruction: str = ""  # its language instruction ("": none)
    narrations: int = 0  # narrations of its steps
    judged: bool = False  # counted in a feedback study's judgements
    ended_by: str = ""  # who ended it (server/export/fields.py, ENDING_FIELDS; "": not said)


def return_stats(returns: Sequence[float]) -> dict[str, float]:
    """Mean, min, max and population std of episode returns (zeros when there are none)."""
    if not returns:
        return {"mean": 0.0, "min": 0.0, "max": 0.0, "std": 0.0}
    return {
        "mean": statistics.fmean(returns),
        "min": min(returns),
        "max": max(returns),
        "std": statistics.pstdev(returns),
    }


def render_card(
    *,
    title: str,
    study: str,
    export_format: str,
    episodes: Sequence[ExportedEpisode],
    loading: str,
    options_text: Sequence[str] = (),
) -> str:
    """The Markdown dataset card of an export; ``loading``: its "Loading" section (the
    format's, see server/export/registry.py)."""
    envs = Counter(e.env_id for e in episodes)
    statuses = Counter(e.status for e in episodes)
    enders = Counter(e.ended_by for e in episodes)
    verdicts = Counter(e.replay_verdict for e in episodes)
    returns = [e.total_reward for e in episodes]
    steps = [e.num_steps for e in episodes]
    stats = return_stats(returns)
    lines = [
        f"# {title}",
        "",
        f"Demonstrations collected with RLDS Studio in study **{study}**.",
        "",
        "## Contents",
        "",
        f"- Format: {export_format}",
        f"- Episodes: {len(episodes)}"
        + (f" ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})" if episodes else ""),
        f"- Steps: {sum(steps)} (per episode: min {min(steps, default=0)}, "
        f"max {max(steps, default=0)}; RLDS steps: the actions taken and each episode's final "
        "observation)",
        f"- Terminated episodes: {sum(e.terminated for e in episodes)}; "
        f"truncated or interrupted: {sum(not e.terminated for e in episodes)}",
        "- Ended by (each episode's `ended_by`): "
        + (
            ", ".join(f"{n} {who or 'not recorded'}" for who, n in sorted(enders.items())) or "none"
        ),  # fmt: skip
        "- Replay verdicts (each episode's `replay_verdict`, `replay_step`, `replay_message`): "
        + (", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) or "none"),
        f"- Judged in feedback studies: {sum(e.judged for e in episodes)} of {len(episodes)}"
        f" episodes ({FIELDS_TEXT})",
        "",
        "| environment | episodes |",
        "|---|---|",
        *(f"| `{env}` | {n} |" for env, n in sorted(envs.items())),
        "",
        *task_lines(episodes),
        "## Returns",
        "",
        "| mean | min | max | std |",
        "|---|---|---|---|",
        f"| {stats['mean']:.4g} | {stats['min']:.4g} | {stats['max']:.4g} | {stats['std']:.4g} |",
        "",
    ]
    if options_text:
        lines += ["## Export options", "", *(f"- {text}" for text in options_text), ""]
    lines += ["## Loading", ""]
    return "\n".join(lines) + "\n" + loading


def _cell(text: str, limit: int = 120) -> str:
    """User text as one Markdown table cell: one line, pipes escaped, shortened."""
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return line.replace("\\", "\\\\").replace("|", "\\|") or "(none)"


def task_lines(episodes: Sequence[ExportedEpisode]) -> list[str]:
    """The card's per-task counts (each episode's ``task_id`` and ``language_instruction``)
    and how many narrations there are; nothing when no episode has a task, an instruction
    or a narration."""
    tasks = Counter((e.task_id, e.instruction) for e in episodes)
    narrations = sum(e.narrations for e in episodes)
    if set(tasks) <= {("", "")} and not narrations:
        return []
    lines = [
        "## Tasks",
        "",
        "| task | instruction | episodes |",
        "|---|---|---|",
        *(
            f"| {f'`{task}`' if task else '(none)'} | {_cell(text)} | {n} |"
            for (task, text), n in sorted(tasks.items())
        ),
        "",
        f"- Narrations: {narrations} over "
        f"{sum(1 for e in episodes if e.narrations)} episodes (each step's `narration`)",
        "",
    ]
    return lines


def option_lines(
    options: ExportOptions,
    tag_names: Sequence[str],
    *,
    metadata: str,
    tags: str,
    extra: Sequence[str] = (),
) -> list[str]:
    """The card's "Export options" lines: whether step metadata (``metadata``, what the
    format makes of it) is kept, the step tags (``tags``, what they become), ``extra`` lines
    and the end tags."""
    lines = [f"{metadata}: " + ("kept" if options.keep_step_metadata else "stripped")]
    if tag_names:
        lines.append(f"{tags}: " + ", ".join(f"`tag:{n}`" for n in tag_names))
    lines += extra
    if options.end_tags:
        lines.append(
            "episodes end at their first step tagged "
            + ", ".join(f"`{n}`" for n in options.end_tags)
            + " (not terminal; returns recomputed)"
        )
    return lines
