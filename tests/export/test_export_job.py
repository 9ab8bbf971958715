"""The export job in the main venv: layout, shards, options, errors, cancel, packaging."""

from __future__ import annotations

import json
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from server.export import (
    EpisodeInput,
    ExportCanceledError,
    ExportError,
    ExportOptions,
    IncompatibleEnvironmentsError,
    InvalidEpisodeError,
    TaggedSpan,
    export_dataset,
    make_archive,
    registry,
)
from server.export.formats.rlds.tfrecord import read_records
from server.recording.envlogger_log import envlogger
from tests.export.conftest import checked, episode_input
from tests.export.recordings import Recording


def test_rlds_layout_and_card(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    recs = recordings["cartpole"]
    progress: list[tuple[int, int, int]] = []
    result = export_dataset(
        checked([episode_input(r) for r in recs]),  # diverged, verified, pending
        ExportOptions(name="demo", max_episodes_per_shard=2, study="My study"),
        tmp_path / "out",
        progress=lambda *a: progress.append(a),
    )
    data_dir = tmp_path / "out" / "demo" / "1.0.0"
    assert result.data_dir == data_dir
    names = sorted(p.name for p in data_dir.iterdir())
    assert names == [
        "dataset_info.json",
        "demo-train.tfrecord-00000-of-00002",
        "demo-train.tfrecord-00001-of-00002",
        "features.json",
        "metadata.json",
    ]
    info = json.loads((data_dir / "dataset_info.json").read_text())
    assert info["name"] == "demo" and info["version"] == "1.0.0"
    assert info["splits"][0]["shardLengths"] == ["2", "1"]
    assert [len(list(read_records(p))) for p in result.shard_paths] == [2, 1]
    steps = [r.num_steps for r in recs]
    assert progress[-1] == (3, 3, sum(steps)) and len(progress) == 3
    card = (tmp_path / "out" / "README.md").read_text()
    returns = [sum(r.rewards) for r in recs]
    assert "My study" in card and f"Steps: {sum(steps)}" in card and "`CartPole-v1` | 3" in card
    assert f"{np.mean(returns):.4g} | {min(returns):.4g} | {max(returns):.4g}" in card
    assert 'tfds.builder_from_directory("demo/1.0.0")' in card
    assert "`replay_step`" in card and ": 1 diverged, 1 pending, 1 verified\n" in card
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder left


def test_shards_split_by_size(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    recs = recordings["pong"]
    result = export_dataset(
        [episode_input(r) for r in recs], ExportOptions(max_shard_bytes=1), tmp_path / "out"
    )
    assert len(result.shard_paths) == 2  # one episode per shard once a shard is over budget


def test_different_spaces_are_refused(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    episodes = [episode_input(recordings["cartpole"][0]), episode_input(recordings["pong"][0])]
    with pytest.raises(IncompatibleEnvironmentsError, match="different observation or action"):
        export_dataset(episodes, ExportOptions(), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_each_log_is_checked_where_it_is_read(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    """Only the first log's header is read before writing; the others are checked against
    it as they are read, so a mismatch in any of them still fails the whole export."""
    cp, pong = recordings["cartpole"], recordings["pong"]
    last_differs = [episode_input(r) for r in cp] + [episode_input(pong[0])]
    for fmt in registry.names():
        with pytest.raises(IncompatibleEnvironmentsError, match=r"cp-1 \(CartPole-v1\).*pong-1"):
            export_dataset(last_differs, ExportOptions(format=fmt), tmp_path / "out")
    wrong_log = EpisodeInput(cp[1].log_dir, "cp-9", "agent-x")
    with pytest.raises(InvalidEpisodeError, match="cp-9: its log at .* is episode cp-2"):
        export_dataset([episode_input(cp[0]), wrong_log], ExportOptions(), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_cancel_and_failure_leave_nothing(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(ExportCanceledError):
        export_dataset(
            [episode_input(r) for r in recs], ExportOptions(), tmp_path / "a", cancel=cancel
        )
    bad = episode_input(recs[1], step_tags=(TaggedSpan("x", 0, 10_000),))
    with pytest.raises(InvalidEpisodeError, match="outside the episode"):
        export_dataset([episode_input(recs[0]), bad], ExportOptions(), tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_bad_inputs(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    rec = recordings["cartpole"][0]
    with pytest.raises(ExportError, match="no episode"):
        export_dataset([], ExportOptions(), tmp_path / "o")
    with pytest.raises(ExportError, match="snake_case"):
        export_dataset([episode_input(rec)], ExportOptions(name="Bad-Name"), tmp_path / "o")
    with pytest.raises(InvalidEpisodeError, match="twice"):
        export_dataset([episode_input(rec)] * 2, ExportOptions(), tmp_path / "o")
    (tmp_path / "exists").mkdir()
    with pytest.raises(ExportError, match="already exists"):
        export_dataset([episode_input(rec)], ExportOptions(), tmp_path / "exists")


def test_envlogger_format(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    rec = recordings["cartpole"][0]
    tag = TaggedSpan("nice", 1, 2)
    result = export_dataset(
        [episode_input(rec, step_tags=(tag,), tags=("t",), notes="hello")],
        ExportOptions(format="envlogger"),
        tmp_path / "out",
    )
    folder = tmp_path / "out" / "episodes" / rec.episode_id
    doc = json.loads((folder / "tags.json").read_text())
    assert doc["step_tags"] == [{"name": "nice", "start": 1, "end": 2}] and doc["notes"] == "hello"
    with envlogger.Reader(str(folder)) as reader:
        obs = [s.timestep.observation for s in reader.steps]
    np.testing.assert_array_equal(np.stack(obs), np.stack(rec.observations))
    assert result.num_steps == rec.num_steps
    assert "envlogger.Reader" in (tmp_path / "out" / "README.md").read_text()


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_packaging(recordings: dict[str, list[Recording]], tmp_path: Path, fmt: str) -> None:
    result = export_dataset(
        [episode_input(recordings["cartpole"][0])], ExportOptions(), tmp_path / "out"
    )
    archive = make_archive(result.path, fmt)
    assert archive.name == f"out.{fmt}"
    if fmt == "zip":
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
    else:
        with tarfile.open(archive) as tf:
            names = {m.name for m in tf.getmembers() if m.isfile()}
    assert "out/README.md" in names
    assert "out/rlds_studio/1.0.0/rlds_studio-train.tfrecord-00000-of-00001" in names
    assert not list(tmp_path.glob(".*partial"))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("fmt", ["tfds", "minari", "lerobot"])
def test_threads_change_no_byte(
    fmt: str,
    recordings: dict[str, list[Recording]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Episodes read and encoded in 3 threads export to the same bytes as one at a time."""
    inputs = [episode_input(r) for r in recordings["cartpole"]]
    outputs = []
    done: list[int] = []
    for threads in ("1", "3"):
        monkeypatch.setenv("STUDIO_EXPORT_THREADS", threads)
        out = tmp_path / f"t{threads}"
        export_dataset(
            inputs, ExportOptions(name="d", format=fmt), out, lambda i, *_: done.append(i)
        )
        outputs.append(_files(out))
    assert done == [1, 2, 3] * 2  # in the episodes' order
    assert outputs[0] == outputs[1]
    monkeypatch.setenv("STUDIO_EXPORT_THREADS", "0")
    with pytest.raises(ExportError, match="STUDIO_EXPORT_THREADS='0': give a whole number"):
        export_dataset(inputs, ExportOptions(name="d", format=fmt), tmp_path / "bad")
