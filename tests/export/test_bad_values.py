"""Values in a log that the RLDS encoder cannot write fail the export with a message naming
the episode, the step and the field (the user then leaves that episode out)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import dm_env
import numpy as np
import pytest
from dm_env import specs

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.export.errors import ValueOutOfRangeError
from server.recording.writer import EpisodeWriter, episode_metadata
from tests.export.conftest import episode_input, make_cartpole
from tests.export.recordings import record_episode

EPISODE = "bad0".ljust(32, "0")


@pytest.mark.parametrize(
    ("bad", "step", "field"),
    [
        ({"input_sent": 1e300}, 2, "timing/input_sent_ms"),  # client_ms: 1e300
        ({"input_sent": math.nan}, 2, "timing/input_sent_ms"),
        ({"seen_step": 2**64}, 2, "timing/seen_step"),
        ({"acks": [[1, 5, math.inf]]}, 1, "timing/frame_drawn_ms"),  # drawn_ms: Infinity
    ],
)
def test_bad_timing_names_episode_step_and_field(
    tmp_path: Path, bad: dict[str, Any], step: int, field: str
) -> None:
    # a real log, written by the recording writer as an unchecked recorder did (timestep 3)
    rec = record_episode(
        make_cartpole(6), tmp_path / "log", env_id="CartPole-v1", episode_id=EPISODE, seed=1,
        bad_timing={3: bad},
    )  # fmt: skip
    with pytest.raises(ValueOutOfRangeError) as caught:
        export_dataset([episode_input(rec)], ExportOptions(), tmp_path / "out")
    message = str(caught.value)
    assert message.startswith(f"episode {EPISODE}: step {step}, field {field}: "), message
    assert not (tmp_path / "out").exists()
    # the raw logs are still exported as recorded
    raw = ExportOptions(format="envlogger")
    assert export_dataset([episode_input(rec)], raw, tmp_path / "raw").num_episodes == 1


class _Int32Env(dm_env.Environment):
    """Declares int32 observations and an action in [0, 3), but yields an int64 beyond int32
    at step 3 (an env that does not keep to its own spec)."""

    def __init__(self) -> None:
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t, 2**32 if self.t == 3 else 0], dtype=np.int64)

    def reset(self) -> dm_env.TimeStep:
        self.t = 0
        return dm_env.restart(self._obs())

    def step(self, action: Any) -> dm_env.TimeStep:
        self.t += 1
        if self.t == 5:
            return dm_env.termination(1.0, self._obs())
        return dm_env.transition(1.0, self._obs())

    def observation_spec(self) -> specs.Array:
        return specs.Array((2,), np.int32, name="observation")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(3, dtype=np.int64, name="action")


def test_int_beyond_its_declared_dtype_is_named(tmp_path: Path) -> None:
    def step_fn(*_: Any) -> dict[str, Any]:
        return {"frame": b"\xff\xd8", "input": "null", "timing": json.dumps({}), "info": "{}"}

    meta = episode_metadata(episode_id=EPISODE, study_id=1, env_id="int32", env_config="{}",
                            seed=1)  # fmt: skip
    writer = EpisodeWriter(_Int32Env(), tmp_path / "log", meta, step_fn)
    writer.reset()
    for _ in range(5):
        writer.step(np.int64(1))
    writer.finalize()
    episode = EpisodeInput(tmp_path / "log", EPISODE, agent_id="a")
    with pytest.raises(ValueOutOfRangeError) as caught:
        export_dataset([episode], ExportOptions(keep_step_metadata=False), tmp_path / "out")
    assert str(caught.value) == (
        f"episode {EPISODE}: step 3, field observation: value 4294967296 does not fit int32 "
        "[-2147483648, 2147483647]"
    )
