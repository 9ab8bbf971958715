"""LeRobot exports loaded by lerobot itself (.consumer-venv-lerobot), value by value.

Each test exports recordings in the main venv, saves the RLDS values it expects from the
recordings' ground truth (the same as the RLDS and Minari consumer tests) plus the recorded
step times and task, and runs lerobot_check.py: it runs the docs' loading snippet
(``LeRobotDataset(..., video_backend="pyav")`` with ``HF_HUB_OFFLINE=1``), compares every
non-video value, and hands back the decoded video frames, compared here with the recorded
frames: the dataset videos are lossless, so every decoded frame equals its recording.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.export import ExportOptions, TaggedSpan, export_dataset
from server.export.formats.lerobot.dataset import FRAME_KEY
from server.export.video import decode_jpeg, psnr
from tests.export.conftest import ROOT, checked, episode_input, exported_verdicts
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording

pytestmark = pytest.mark.consumer


OUTCOMES = {"outcome": "failure", "player_outcome": "success", "reviewer_outcome": "failure"}


def run_lerobot_check(export_dir: Path, name: str, expected: Path, frames: Path) -> dict:
    """lerobot_check.py's report; fails (not skips) when the consumer venv is absent."""
    docs = str(ROOT / "docs" / "export.md")
    args = (docs, str(export_dir), name, str(expected), str(frames))
    return check_report("lerobot", "lerobot", *args, timeout=580)


def with_times(want: dict[str, Any], rec: Recording, task: str) -> dict[str, Any]:
    """The expected episode plus its recorded step times (s from the first) and task."""
    applied = np.asarray([t["applied"] for t in rec.timings], dtype=np.float64)
    n = int(want["_length"])
    return {**want, "_times": (applied[:n] - applied[0]) / 1000.0, "_task": task}


def recorded_frames(rec: Recording, key: str, n: int) -> list[np.ndarray]:
    if key == FRAME_KEY:
        return [decode_jpeg(f) for f in rec.frames[:n]]
    obs = rec.observations[:n]
    leaf = key.split(".")[-1]
    return [np.asarray(o[leaf] if isinstance(o, dict) else o) for o in obs]


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
def test_lerobot_loads_every_value(
    env: str, recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings[env]
    tags = (TaggedSpan("jump", 0, 1), TaggedSpan("good", 1, 1))
    task = f"Play {env} well"
    # the first episode's replay diverged, the second's was verified (the rest: pending)
    inputs = checked(
        [
            dataclasses.replace(
                episode_input(r, step_tags=tags, tags=("a", "b"), notes="n", outcomes=OUTCOMES),
                instruction=task,
            )
            for r in recs
        ]
    )
    options = ExportOptions(name="ds", format="lerobot")
    result = export_dataset(inputs, options, tmp_path / "out")
    expected = [
        with_times(
            expected_episode(
                r,
                tags=("a", "b"),
                notes="n",
                step_tags=tags,
                tag_names=("good", "jump"),
                outcomes=OUTCOMES,
                replay=v,
                instruction=task,
            ),
            r,
            task,
        )
        for r, v in zip(recs, exported_verdicts(len(recs)), strict=True)
    ]
    save_expected(tmp_path / "expected.npz", expected)
    report = run_lerobot_check(
        result.path, "ds", tmp_path / "expected.npz", tmp_path / "frames.npz"
    )
    total = sum(r.num_steps for r in recs)
    assert report["mode"] == "lerobot" and report["episodes"] == len(recs)
    assert report["frames"] == total
    assert FRAME_KEY in report["videos"]
    decoded = np.load(tmp_path / "frames.npz")
    for i, rec in enumerate(recs):
        for key in report["videos"]:
            got = decoded[f"{i}|{key}"]
            want = recorded_frames(rec, key, rec.num_steps)
            assert len(got) == len(want)
            worst = min(psnr(g, w) for g, w in zip(got, want, strict=True))
            assert worst == float("inf"), f"{rec.episode_id} {key}: PSNR {worst:.1f} dB"


def test_lerobot_stripped_and_cut_by_end_tag(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    inputs, expected = [], []
    for r in recs:
        tags = (TaggedSpan("crash", 3, 3),) if r.episode_id == "cp-1" else ()
        inputs.append(episode_input(r, step_tags=tags))
        want = expected_episode(
            r, step_tags=tags, tag_names=("crash",), end_tags=("crash",), keep_step_metadata=False
        )
        expected.append(with_times(want, r, "CartPole-v1"))
    options = ExportOptions(
        name="cut",
        format="lerobot",
        keep_step_metadata=False,
        end_tags=("crash",),
        max_episodes_per_shard=2,
    )
    result = export_dataset(inputs, options, tmp_path / "out")
    assert result.episodes[0].num_steps == 4 and not result.episodes[0].terminated
    save_expected(tmp_path / "expected.npz", expected)
    report = run_lerobot_check(
        result.path, "cut", tmp_path / "expected.npz", tmp_path / "frames.npz"
    )
    assert report["episodes"] == 3 and report["videos"] == []
    assert report["frames"] == sum(e.num_steps for e in result.episodes)
