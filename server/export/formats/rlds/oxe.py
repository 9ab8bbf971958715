"""The Open X-Embodiment profile of the RLDS export (``profile="oxe"``).

On top of the RLDS layout: every step gets ``language_instruction`` (text); the observation is
always a dict (a single image observation becomes ``observation/image``, a single vector one
``observation/state``; Dict observations keep their keys); the episode fields move under
``episode_metadata``; ``dataset_statistics.json`` beside the shards holds the statistics
Octo/OpenVLA-style loaders compute (mean, std, min, max, p01, p99 per dimension of the
actions and of the vector observations, and the transition and trajectory counts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from server.export.episode import EnvSpecs, RldsEpisode
from server.export.fields import is_image_spec
from server.export.formats.rlds.features import tfds_features

PROFILES = ("", "oxe")
STATISTICS_FILE = "dataset_statistics.json"


def observation_specs(specs: EnvSpecs) -> dict[str, Any]:
    """The observation as a dict of specs (see the module doc)."""
    obs = specs.observation
    if isinstance(obs, dict):
        return {str(k): v for k, v in obs.items()}
    return {"image" if is_image_spec(obs) else "state": obs}


def profile_specs(specs: EnvSpecs) -> EnvSpecs:
    """The specs the profile's features are built from."""
    return EnvSpecs(observation_specs(specs), specs.action, specs.reward, specs.discount)


def episode_features(step: dict[str, Any], episode_fields: dict[str, Any]) -> Any:
    """The profile's FeaturesDict: steps with ``language_instruction``, ``episode_metadata``."""
    return tfds_features.FeaturesDict(
        {
            "steps": tfds_features.Dataset({**step, "language_instruction": tfds_features.Text()}),
            "episode_metadata": tfds_features.FeaturesDict(episode_fields),
        }
    )


def wrap_observations(episode: RldsEpisode) -> RldsEpisode:
    """The episode with dict observations (the profile's names) and matching specs."""
    if isinstance(episode.specs.observation, dict):
        return episode
    key = next(iter(observation_specs(episode.specs)))
    episode.observations = [{key: o} for o in episode.observations]
    episode.specs = profile_specs(episode.specs)
    return episode


def profile_example(example: dict[str, Any], instruction: str) -> dict[str, Any]:
    """An RLDS example dict in the profile's layout."""
    steps = dict(example["steps"])
    steps["language_instruction"] = [instruction] * len(steps["is_first"])
    meta = {k: v for k, v in example.items() if k != "steps"}
    return {"steps": steps, "episode_metadata": meta}


@dataclass(frozen=True)
class EpisodeRows:
    """One (profile) episode's actions and vector observations, a row per step (float64)."""

    actions: np.ndarray
    observations: dict[str, np.ndarray]


def episode_rows(episode: RldsEpisode) -> EpisodeRows:
    """What :class:`Statistics` keeps of one (profile) episode."""
    observations = {}
    for key, spec in observation_specs(episode.specs).items():
        if isinstance(spec, dict) or is_image_spec(spec):
            continue
        observations[key] = _rows([o[key] for o in episode.observations])
    return EpisodeRows(_rows(episode.actions), observations)


class Statistics:
    """Per-dimension statistics over every exported step, as Octo's loader computes them.

    Episodes are added in the dataset's order (the statistics' floats depend on it).
    """

    def __init__(self) -> None:
        self.actions: list[np.ndarray] = []
        self.observations: dict[str, list[np.ndarray]] = {}
        self.trajectories = 0

    def add(self, rows: EpisodeRows) -> None:
        """Add one episode's rows (:func:`episode_rows`)."""
        self.trajectories += 1
        self.actions.append(rows.actions)
        for key, values in rows.observations.items():
            self.observations.setdefault(key, []).append(values)

    def document(self) -> dict[str, Any]:
        """The JSON document of ``dataset_statistics.json``."""
        actions = np.concatenate(self.actions)
        return {
            "action": _stats(actions),
            "observation": {k: _stats(np.concatenate(v)) for k, v in self.observations.items()},
            "num_transitions": int(len(actions)),
            "num_trajectories": self.trajectories,
        }

    def write(self, data_dir: Path) -> None:
        """Write ``dataset_statistics.json`` into the TFDS data folder."""
        (Path(data_dir) / STATISTICS_FILE).write_text(json.dumps(self.document(), indent=1))


def _rows(values: list[Any]) -> np.ndarray:
    if values and isinstance(values[0], dict):
        return np.concatenate([_rows([v[k] for v in values]) for k in values[0]], axis=1)
    return np.stack([np.asarray(v, dtype=np.float64) for v in values]).reshape(len(values), -1)


def _stats(rows: np.ndarray) -> dict[str, list[float]]:
    return {
        "mean": rows.mean(axis=0).tolist(),
        "std": rows.std(axis=0).tolist(),
        "max": rows.max(axis=0).tolist(),
        "min": rows.min(axis=0).tolist(),
        "p99": np.percentile(rows, 99, axis=0).tolist(),
        "p01": np.percentile(rows, 1, axis=0).tolist(),
    }
