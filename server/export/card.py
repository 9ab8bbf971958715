"""The dataset card (README.md) written beside every export."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class EpisodeSummary:
    """What the card (and the job's result) says about one exported episode."""

    episode_id: str
    env_id: str
    status: str
    num_steps: int
    total_reward: float
    terminated: bool


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


def _rlds_loading(data_path: str) -> str:
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


def _envlogger_loading() -> str:
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
        "outcomes).\n"
        "Steps are dm_env timesteps: action a_t, reward and discount are stored with o_{t+1}.\n"
    )


def _minari_loading(dataset: str) -> str:
    return (
        "```python\n"
        "import os\n"
        'os.environ["MINARI_DATASETS_PATH"] = "<this folder>"  # before importing minari\n'
        "import minari\n"
        f'dataset = minari.load_dataset("{dataset}")\n'
        "for episode in dataset.iterate_episodes():\n"
        "    episode.observations, episode.actions, episode.rewards, episode.infos\n"
        "```\n\n"
        "Minari's arrow storage (`minari[arrow]`, tested with minari 0.5.4). An episode of n\n"
        "observations holds n - 1 actions, rewards, terminations and truncations; step\n"
        "metadata and `tag:<name>` columns are in `episode.infos` (one value per observation).\n"
        "Episode metadata (`episode_id`, `agent_id`, `status`, `tags`, `notes`, `outcome`,\n"
        "`player_outcome`, `reviewer_outcome`, `env_id`,\n"
        "`env_config`, `seed`): `dataset.storage.get_episode_metadata([i])`.\n"
    )


def _lerobot_loading(name: str) -> str:
    return (
        "```python\n"
        "import os\n"
        'os.environ["HF_HUB_OFFLINE"] = "1"  # a local dataset: nothing is downloaded\n'
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n\n"
        f'dataset = LeRobotDataset("rlds-studio/{name}", root="<this folder>/{name}",\n'
        '                         video_backend="pyav")\n'
        "step = dataset[0]  # observation.*, action, next.reward, next.done, ..., task\n"
        "```\n\n"
        "LeRobot v3.0 (tested with lerobot 0.4.4). Videos are lossless H.264 (decoded frames\n"
        "equal the recorded ones); `timestamp` is each step's recorded time. Episode metadata\n"
        "(`episode_id`, `agent_id`, `status`, `outcome`, `episode_tags`, `notes`, `env_id`,\n"
        "`seed`): `dataset.meta.episodes[i]`.\n"
    )


def render_card(
    *,
    title: str,
    study: str,
    export_format: str,
    episodes: Sequence[EpisodeSummary],
    data_path: str,
    options_text: Sequence[str] = (),
) -> str:
    """The Markdown dataset card of an export."""
    envs = Counter(e.env_id for e in episodes)
    statuses = Counter(e.status for e in episodes)
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
        f"max {max(steps, default=0)})",
        f"- Terminated episodes: {sum(e.terminated for e in episodes)}; "
        f"truncated or interrupted: {sum(not e.terminated for e in episodes)}",
        "",
        "| environment | episodes |",
        "|---|---|",
        *(f"| `{env}` | {n} |" for env, n in sorted(envs.items())),
        "",
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
    if export_format == "rlds":
        loading = _rlds_loading(data_path)
    elif export_format == "minari":
        loading = _minari_loading(data_path)
    elif export_format == "lerobot":
        loading = _lerobot_loading(data_path)
    else:
        loading = _envlogger_loading()
    return "\n".join(lines) + "\n" + loading
