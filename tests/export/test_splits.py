"""A dataset's export: its episodes' splits (train, validation, test) written in every format
as its library expects, loaded back by that library (the consumer venvs).

TFDS: one dataset whose splits each have their shards and their entry in dataset_info.json,
loaded value by value per split; LeRobot: the episodes in split order and info.json's
ranges; Minari: one dataset per split; envlogger: a folder per split. Without splits the
output is the study export's, byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.export.base import splits_of
from server.export.errors import ExportError
from server.export.formats.lerobot.writer import split_ranges
from tests.export.conftest import ROOT, episode_input
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording

pytestmark = pytest.mark.consumer

# cartpole's three recordings, given out of split order: the export writes train first
SPLITS = {"cp-1": "test", "cp-2": "train", "cp-3": "validation"}


def _inputs(recs: list[Recording], splits: dict[str, str]):  # type: ignore[no-untyped-def]
    return [replace(episode_input(r), split=splits[r.episode_id]) for r in recs]


def test_tfds_splits_load_value_by_value(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    result = export_dataset(_inputs(recs, SPLITS), ExportOptions(name="ds"), tmp_path / "out")
    data_dir = result.data_dir
    assert data_dir is not None
    assert sorted(p.name for p in data_dir.glob("*.tfrecord-*")) == [
        "ds-test.tfrecord-00000-of-00001",
        "ds-train.tfrecord-00000-of-00001",
        "ds-validation.tfrecord-00000-of-00001",
    ]
    info = json.loads((data_dir / "dataset_info.json").read_text())
    assert [(s["name"], s["shardLengths"]) for s in info["splits"]] == [
        ("train", ["1"]), ("validation", ["1"]), ("test", ["1"]),
    ]  # fmt: skip
    card = (tmp_path / "out" / "README.md").read_text()
    assert 'validation = builder.as_dataset(split="validation")' in card
    assert "`train`, `validation`, `test`" in card

    report = check_report("rlds", "splits", "tfds", str(data_dir))
    assert report["splits"] == {
        "train": {"episodes": ["cp-2"], "num_examples": 1, "shards": 1},
        "validation": {"episodes": ["cp-3"], "num_examples": 1, "shards": 1},
        "test": {"episodes": ["cp-1"], "num_examples": 1, "shards": 1},
    }
    for rec in recs:  # each split holds its episode, every value as recorded
        split = SPLITS[rec.episode_id]
        save_expected(tmp_path / f"{split}.npz", [expected_episode(rec)])
        report = check_report(
            "rlds", "rlds", "values", str(data_dir), str(tmp_path / f"{split}.npz"), split
        )
        assert report == {"mode": "values", "episodes": 1, "steps": rec.num_steps}


def test_tfds_shard_limits_apply_per_split_and_empty_splits_are_left_out(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    splits = {"cp-1": "train", "cp-2": "test", "cp-3": "train"}
    options = ExportOptions(name="ds", max_episodes_per_shard=1)
    result = export_dataset(_inputs(recs, splits), options, tmp_path / "out")
    assert result.data_dir is not None
    assert sorted(p.name for p in result.data_dir.glob("*.tfrecord-*")) == [
        "ds-test.tfrecord-00000-of-00001",
        "ds-train.tfrecord-00000-of-00002",
        "ds-train.tfrecord-00001-of-00002",
    ]
    info = json.loads((result.data_dir / "dataset_info.json").read_text())
    assert [s["name"] for s in info["splits"]] == ["train", "test"]
    assert [e.episode_id for e in result.episodes] == ["cp-1", "cp-3", "cp-2"]


def test_an_all_train_dataset_writes_the_study_exports_files(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    study = export_dataset([episode_input(r) for r in recs], ExportOptions(), tmp_path / "a")
    train = {r.episode_id: "train" for r in recs}
    dataset = export_dataset(_inputs(recs, train), ExportOptions(), tmp_path / "b")
    assert study.data_dir is not None and dataset.data_dir is not None
    names = sorted(p.name for p in study.data_dir.iterdir())
    assert names == sorted(p.name for p in dataset.data_dir.iterdir())
    for name in names:
        assert (study.data_dir / name).read_bytes() == (dataset.data_dir / name).read_bytes()


def test_lerobot_writes_split_order_and_ranges(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    splits = {"cp-1": "test", "cp-2": "train", "cp-3": "test"}
    options = ExportOptions(name="ds", format="lerobot")
    result = export_dataset(_inputs(recs, splits), options, tmp_path / "out")
    info = json.loads((tmp_path / "out" / "ds" / "meta" / "info.json").read_text())
    assert info["splits"] == {"train": "0:1", "test": "1:3"}
    assert 'dataset.meta.info["splits"]["test"]' in (tmp_path / "out" / "README.md").read_text()
    report = check_report("lerobot", "splits", "lerobot", str(tmp_path / "out" / "ds"),
                          "rlds-studio/ds", timeout=580)  # fmt: skip
    frames = {r.episode_id: r.num_steps for r in recs}
    assert report["splits"] == {
        "train": {"range": "0:1", "episodes": ["cp-2"], "frames": frames["cp-2"]},
        "test": {"range": "1:3", "episodes": ["cp-1", "cp-3"],
                 "frames": frames["cp-1"] + frames["cp-3"]},
    }  # fmt: skip
    assert [e.episode_id for e in result.episodes] == ["cp-2", "cp-1", "cp-3"]


def test_minari_writes_a_dataset_per_split(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    splits = {"cp-1": "train", "cp-2": "validation", "cp-3": "train"}
    options = ExportOptions(name="ds", format="minari")
    result = export_dataset(_inputs(recs, splits), options, tmp_path / "out")
    assert sorted(p.name for p in result.path.iterdir()) == [
        "README.md", "ds-train-v1", "ds-validation-v1",
    ]  # fmt: skip
    card = (result.path / "README.md").read_text()
    assert 'validation = minari.load_dataset("ds-validation-v1")' in card
    report = check_report("minari", "splits", "minari", str(result.path), "ds-train-v1",
                          "ds-validation-v1")  # fmt: skip
    assert report["splits"] == {
        "ds-train-v1": {"episodes": ["cp-1", "cp-3"]},
        "ds-validation-v1": {"episodes": ["cp-2"]},
    }
    docs = str(ROOT / "docs" / "export.md")
    for split in ("train", "validation"):  # the docs' snippet on each, value by value
        mine = [r for r in recs if splits[r.episode_id] == split]
        save_expected(tmp_path / f"{split}.npz", [expected_episode(r) for r in mine])
        report = check_report("minari", "minari", docs, str(result.path), f"ds-{split}-v1",
                              str(tmp_path / f"{split}.npz"))  # fmt: skip
        assert report["episodes"] == len(mine)


def test_envlogger_writes_a_folder_per_split(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    options = ExportOptions(name="ds", format="envlogger")
    seen: list[tuple[int, int, int]] = []
    out = tmp_path / "out"
    export_dataset(_inputs(recs, SPLITS), options, out, progress=lambda *a: seen.append(a))
    for rec in recs:
        folder = out / SPLITS[rec.episode_id] / "episodes" / rec.episode_id
        assert json.loads((folder / "tags.json").read_text())["episode_id"] == rec.episode_id
    assert not (out / "episodes").exists()
    # the progress counts on across the splits: train, validation, test
    steps = {r.episode_id: r.num_steps for r in recs}
    assert seen == [
        (1, 3, steps["cp-2"]),
        (2, 3, steps["cp-2"] + steps["cp-3"]),
        (3, 3, sum(steps.values())),
    ]
    assert '`envlogger.Reader("test/episodes/<episode_id>")`' in (out / "README.md").read_text()


def test_split_names_and_ranges() -> None:
    train = EpisodeInput(log_dir=Path("nowhere"), episode_id="e1", agent_id="a")
    assert splits_of([]) == [] and splits_of([train]) == []
    assert splits_of([replace(train, split="test"), train]) == ["train", "test"]
    with pytest.raises(ExportError, match="unknown split 'dev'"):
        splits_of([replace(train, split="dev")])
    assert split_ranges(["train", "train", "validation", "test"]) == {
        "train": "0:2", "validation": "2:3", "test": "3:4",
    }  # fmt: skip
    with pytest.raises(ExportError, match="not together"):
        split_ranges(["train", "test", "train"])


def test_the_oxe_profile_writes_the_splits_too(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    options = ExportOptions(name="ds", profile="oxe")
    result = export_dataset(_inputs(recs, SPLITS), options, tmp_path / "out")
    assert result.data_dir is not None
    info = json.loads((result.data_dir / "dataset_info.json").read_text())
    assert [s["name"] for s in info["splits"]] == ["train", "validation", "test"]
    report = check_report("rlds", "splits", "tfds", str(result.data_dir))
    assert {s: v["episodes"] for s, v in report["splits"].items()} == {
        "train": ["cp-2"], "validation": ["cp-3"], "test": ["cp-1"],
    }  # fmt: skip
