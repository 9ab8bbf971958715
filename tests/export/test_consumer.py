"""Exports loaded as a researcher would: real TensorFlow, tensorflow-datasets and rlds.

Each test exports recordings in the main venv, saves the values it expects from the
recordings' ground truth, and runs consumer_check.py with .consumer-venv/bin/python.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from server.export import ExportOptions, TaggedSpan, export_dataset
from tests.export.conftest import ROOT, checked, episode_input, exported_verdicts
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording

pytestmark = pytest.mark.consumer


OUTCOMES = [{"outcome": "failure", "player_outcome": "success", "reviewer_outcome": "failure"}]


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
def test_every_value_loads_back(
    env: str,
    recordings: dict[str, list[Recording]],
    consumer: Callable[..., dict],
    tmp_path: Path,
) -> None:
    recs = recordings[env]
    tags = (TaggedSpan("jump", 0, 1), TaggedSpan("good", 1, 1))
    # the reviewer overrode the player's answer on the first episode; the others: the player's
    outcomes = [
        OUTCOMES[0] if i == 0 else {"outcome": "success", "player_outcome": "success"}
        for i in range(len(recs))
    ]
    # the first episode's replay diverged, the second's was verified (the rest: pending)
    inputs = checked(
        [
            episode_input(r, step_tags=tags, tags=("a", "b"), notes="n", outcomes=o)
            for r, o in zip(recs, outcomes, strict=True)
        ]
    )
    result = export_dataset(
        inputs, ExportOptions(name="ds", max_episodes_per_shard=1), tmp_path / "out"
    )
    assert len(result.shard_paths) == len(recs)
    expected = [
        expected_episode(
            r, tags=("a", "b"), notes="n", outcomes=o, replay=v, step_tags=tags,
            tag_names=("good", "jump"),
        )
        for r, o, v in zip(recs, outcomes, exported_verdicts(len(recs)), strict=True)
    ]  # fmt: skip
    save_expected(tmp_path / "expected.npz", expected)
    report = consumer("values", str(result.data_dir), str(tmp_path / "expected.npz"))
    assert report == {
        "mode": "values",
        "episodes": len(recs),
        "steps": sum(r.num_steps for r in recs),
    }


def test_stripped_and_truncated_by_end_tag(
    recordings: dict[str, list[Recording]], consumer: Callable[..., dict], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    ends = {"cp-1": 4, "cp-3": 2}
    inputs, expected = [], []
    for r in recs:
        tags = (
            (TaggedSpan("crash", ends[r.episode_id], ends[r.episode_id]),)
            if r.episode_id in ends
            else ()
        )
        tags += (TaggedSpan("mark", 0, 2),)
        inputs.append(episode_input(r, step_tags=tags))
        expected.append(
            expected_episode(
                r,
                step_tags=tags,
                tag_names=("mark",),
                end_tags=("crash",),
                keep_step_metadata=False,
            )
        )
    options = ExportOptions(
        name="cut", keep_step_metadata=False, step_tag_names=("mark",), end_tags=("crash",)
    )
    result = export_dataset(inputs, options, tmp_path / "out")
    assert [e.num_steps for e in result.episodes] == [5, recs[1].num_steps, 3]
    assert not any(e.terminated for e in result.episodes[::2])
    save_expected(tmp_path / "expected.npz", expected)
    report = consumer("values", str(result.data_dir), str(tmp_path / "expected.npz"))
    assert report["episodes"] == 3 and report["steps"] == 5 + recs[1].num_steps + 3


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
def test_same_tensors_as_tfds_reference_reader(
    env: str,
    recordings: dict[str, list[Recording]],
    consumer: Callable[..., dict],
    tmp_path: Path,
) -> None:
    recs = recordings[env]
    logs = tmp_path / "logs"
    for r in recs:  # rlds_base walks one folder for every log under it
        shutil.copytree(r.log_dir, logs / r.episode_id)
    result = export_dataset([episode_input(r) for r in recs], ExportOptions(), tmp_path / "out")
    report = consumer("reference", str(result.data_dir), str(logs), str(tmp_path / "ref"))
    assert report["episodes"] == len(recs)
    assert report["fields_compared"] > 0


def test_envlogger_format_reads_back(
    recordings: dict[str, list[Recording]], consumer: Callable[..., dict], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    result = export_dataset(
        checked([episode_input(r, outcomes=OUTCOMES[0]) for r in recs]),
        ExportOptions(format="envlogger"),
        tmp_path / "out",
    )
    expected = [
        expected_episode(r, outcomes=OUTCOMES[0], replay=v)
        for r, v in zip(recs, exported_verdicts(len(recs)), strict=True)
    ]
    save_expected(tmp_path / "expected.npz", expected)
    report = consumer("envlogger", str(result.path), str(tmp_path / "expected.npz"))
    assert report == {"mode": "envlogger", "episodes": len(recs)}


def oxe_expected(expected: dict, instruction: str) -> dict:
    """The plain RLDS expectation in the OXE profile's layout."""
    out: dict = {}
    for key, value in expected.items():
        if key == "steps/observation":
            image = np.asarray(value).dtype == np.uint8 and np.asarray(value).ndim == 4
            out["steps/observation/" + ("image" if image else "state")] = value
        elif key.startswith(("steps/", "_")):
            out[key] = value
        else:
            out[f"episode_metadata/{key}"] = value
    out["steps/language_instruction"] = np.asarray([instruction] * int(expected["_length"]))
    return out


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
def test_oxe_profile_loads_with_statistics(
    env: str,
    recordings: dict[str, list[Recording]],
    consumer: Callable[..., dict],
    tmp_path: Path,
) -> None:
    recs = recordings[env]
    tags = (TaggedSpan("good", 1, 1),)
    instruction = "Balance the pole.\n\nUse the arrow keys."
    inputs = [
        replace(
            episode_input(r, step_tags=tags, tags=("a",), outcomes=OUTCOMES[0]),
            instruction=instruction,
        )
        for r in recs
    ]
    result = export_dataset(inputs, ExportOptions(name="oxe_ds", profile="oxe"), tmp_path / "out")
    expected = [
        oxe_expected(
            expected_episode(
                r,
                tags=("a",),
                outcomes=OUTCOMES[0],
                step_tags=tags,
                tag_names=("good",),
                instruction=instruction,
            ),
            instruction,
        )
        for r in recs
    ]
    save_expected(tmp_path / "expected.npz", expected)
    doc = str(ROOT / "docs" / "export.md")
    out = consumer("oxe", doc, str(result.path), "oxe_ds", str(tmp_path / "expected.npz"))
    assert out == {
        "mode": "oxe",
        "episodes": len(recs),
        "steps": sum(r.num_steps for r in recs),
    }
