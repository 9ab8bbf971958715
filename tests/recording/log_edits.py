"""Episode logs edited on disk by tests (a log that lies, is cut, or lost its seed), written
again by the recovery's own rewrite so that the result is a log as the worker writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from server.recording.envlogger_log import step_data
from server.recording.recovery import _rewrite
from server.recording.writer import open_reader


def rewrite_log(
    directory: Path, *, keep: int | None = None, seed: int | None = None,
    step: int | None = None, action: Any = None, reward: float | None = None,
    observation: Callable[[Any], Any] | None = None,
) -> None:  # fmt: skip
    """The log written again: its first ``keep`` timesteps, another recorded ``seed``, or at
    timestep ``step`` another recorded ``action`` (int64), ``reward`` (float64) or
    observation (``observation(recorded)``)."""
    with open_reader(directory) as reader:
        steps = list(reader.steps)
        metadata = dict(reader.metadata())
        ends = list(reader.episode_metadata())
    if seed is not None:
        metadata["seed"] = seed
    if step is not None:
        old = steps[step]
        timestep = old.timestep
        if reward is not None:
            timestep = timestep._replace(reward=np.float64(reward))
        if observation is not None:
            timestep = timestep._replace(observation=observation(timestep.observation))
        new_action = old.action if action is None else np.asarray(action, dtype=np.int64)
        steps[step] = step_data.StepData(timestep, new_action, old.custom_data)
    _rewrite(directory, metadata, steps[:keep], [], ends)
