"""Minari exports loaded by minari itself (.consumer-venv-minari), value by value.

Each test exports recordings in the main venv, saves the RLDS values it expects from the
recordings' ground truth (the same as the RLDS consumer tests), and runs minari_check.py,
which runs the docs' loading snippet and compares every loaded value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from server.export import ExportOptions, TaggedSpan, export_dataset
from tests.export.conftest import ROOT, checked, episode_input, exported_verdicts
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording

pytestmark = pytest.mark.consumer


def run_minari_check(export_dir: Path, dataset: str, expected: Path) -> dict:
    """minari_check.py's report; fails (not skips) when the consumer venv is absent."""
    docs = str(ROOT / "docs" / "export.md")
    return check_report("minari", "minari", docs, str(export_dir), dataset, str(expected))


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
def test_minari_loads_every_value(
    env: str, recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings[env]
    tags = (TaggedSpan("jump", 0, 1), TaggedSpan("good", 1, 1))
    outcomes = {"outcome": "success", "player_outcome": "failure", "reviewer_outcome": "success"}
    # the first episode's replay diverged, the second's was verified (the rest: pending)
    inputs = checked(
        [
            episode_input(r, step_tags=tags, tags=("a", "b"), notes="n", outcomes=outcomes)
            for r in recs
        ]
    )
    options = ExportOptions(name="ds", format="minari")
    result = export_dataset(inputs, options, tmp_path / "out")
    expected = [
        expected_episode(
            r,
            tags=("a", "b"),
            notes="n",
            outcomes=outcomes,
            replay=v,
            step_tags=tags,
            tag_names=("good", "jump"),
        )
        for r, v in zip(recs, exported_verdicts(len(recs)), strict=True)
    ]
    save_expected(tmp_path / "expected.npz", expected)
    report = run_minari_check(result.path, "ds-v1", tmp_path / "expected.npz")
    assert report == {
        "mode": "minari",
        "episodes": len(recs),
        "steps": sum(r.num_steps for r in recs),
    }


def test_minari_stripped_and_cut_by_end_tag(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    inputs, expected = [], []
    for r in recs:
        tags = (TaggedSpan("crash", 3, 3),) if r.episode_id == "cp-1" else ()
        inputs.append(episode_input(r, step_tags=tags))
        expected.append(
            expected_episode(
                r,
                step_tags=tags,
                tag_names=("crash",),
                end_tags=("crash",),
                keep_step_metadata=False,
            )
        )
    options = ExportOptions(
        name="cut", format="minari", keep_step_metadata=False, end_tags=("crash",)
    )
    result = export_dataset(inputs, options, tmp_path / "out")
    assert result.episodes[0].num_steps == 4 and not result.episodes[0].terminated
    save_expected(tmp_path / "expected.npz", expected)
    report = run_minari_check(result.path, "cut-v1", tmp_path / "expected.npz")
    assert report["episodes"] == 3 and report["steps"] == sum(e.num_steps for e in result.episodes)
