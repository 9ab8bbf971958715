"""The RLDS export on Apache Beam (DirectRunner, several workers) against the single-process
exporter on the same real recorded episodes: the same files byte for byte, the same records
value for value, the same dataset_info; errors name the episode; cancel leaves nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from tensorflow_datasets.proto import tf_example_pb2

from server.export import (
    ExportCanceledError,
    ExportError,
    ExportOptions,
    ExportResult,
    TaggedSpan,
    export_dataset,
)
from server.export.beam_config import BeamConfig
from server.export.formats.rlds.beam import WORK_DIR
from server.export.formats.rlds.tfrecord import read_records
from tests.export.conftest import checked, episode_input, exported_verdicts
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording

TAGS = (TaggedSpan("jump", 0, 1), TaggedSpan("good", 1, 1))


def _inputs(recs: list[Recording]) -> list:  # type: ignore[type-arg]
    """The first episode's replay diverged, the second's was verified (the rest: pending)."""
    return checked(
        [
            episode_input(r, step_tags=TAGS, tags=("a", "b"), notes=f"note {r.episode_id}")
            for r in recs
        ]
    )


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _records(result: ExportResult) -> list[dict[str, list]]:  # type: ignore[type-arg]
    """Every record's features as Python lists, in shard order."""
    out = []
    for shard in result.shard_paths:
        for data in read_records(shard):
            example = tf_example_pb2.Example.FromString(data)
            features = {}
            for key, feature in example.features.feature.items():
                kind = feature.WhichOneof("kind")
                features[key] = list(getattr(feature, kind).value) if kind else []
            out.append(features)
    return out


def _compare(single: ExportResult, beam: ExportResult) -> None:
    """Same episodes, records (decoded), dataset_info and files: nothing differs."""
    assert beam.episodes == single.episodes
    assert [p.name for p in beam.shard_paths] == [p.name for p in single.shard_paths]
    assert single.data_dir is not None and beam.data_dir is not None
    assert _records(beam) == _records(single)
    info_single = json.loads((single.data_dir / "dataset_info.json").read_text())
    info_beam = json.loads((beam.data_dir / "dataset_info.json").read_text())
    assert info_beam == info_single
    assert info_beam["splits"][0]["shardLengths"] == [
        str(len(list(read_records(p)))) for p in single.shard_paths
    ]
    assert _files(beam.path) == _files(single.path)  # every file, byte for byte
    assert not (beam.path / WORK_DIR).exists()


@pytest.mark.parametrize(
    ("env", "mode", "workers", "limits"),
    [
        # images (JPEG frames, RGB observations), 2 worker processes, one shard per episode
        ("pong", "multi_processing", 2, {"max_episodes_per_shard": 1}),
        # size-limited shards and the OXE profile's statistics, 3 worker threads
        ("cartpole", "multi_threading", 3, {"max_shard_bytes": 1500, "profile": "oxe"}),
    ],
)
def test_same_output_as_single_process(
    env: str,
    mode: str,
    workers: int,
    limits: dict,  # type: ignore[type-arg]
    recordings: dict[str, list[Recording]],
    tmp_path: Path,
) -> None:
    inputs = _inputs(recordings[env])
    options = ExportOptions(name="ds", study="S", **limits)
    single = export_dataset(inputs, options, tmp_path / "single")
    assert len(single.shard_paths) >= 2
    progress: list[tuple[int, int, int]] = []
    beam = export_dataset(
        inputs,
        replace(options, beam=BeamConfig(workers=workers, running_mode=mode)),
        tmp_path / "beam",
        progress=lambda *a: progress.append(a),
    )
    _compare(single, beam)
    steps = sum(e.num_steps for e in single.episodes)
    assert progress[-1] == (len(inputs), len(inputs), steps)
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)


def test_episode_error_is_named_and_leaves_nothing(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    inputs = _inputs(recs)
    inputs[1] = episode_input(recs[1], step_tags=(TaggedSpan("late", 0, 10_000),))
    options = ExportOptions(name="ds", beam=BeamConfig(workers=2, running_mode="multi_threading"))
    with pytest.raises(ExportError, match=f"episode {recs[1].episode_id}"):
        export_dataset(inputs, options, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_cancel_leaves_nothing(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    calls: list[int] = []

    def cancel() -> bool:  # asked for as soon as the first episode is encoded
        return bool(calls)

    options = ExportOptions(name="ds", beam=BeamConfig(workers=2))
    with pytest.raises(ExportCanceledError):
        export_dataset(
            _inputs(recordings["pong"]),
            options,
            tmp_path / "out",
            progress=lambda *a: calls.append(a[0]),
            cancel=cancel,
        )
    assert calls and list(tmp_path.iterdir()) == []


def test_other_formats_are_refused(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    for fmt in ("envlogger", "minari"):
        options = ExportOptions(format=fmt, beam=BeamConfig())  # type: ignore[arg-type]
        with pytest.raises(ExportError, match="not on Beam"):
            export_dataset(_inputs(recordings["cartpole"]), options, tmp_path / fmt)


@pytest.mark.consumer
def test_beam_export_loads_in_tensorflow(
    recordings: dict[str, list[Recording]], consumer: Callable[..., dict], tmp_path: Path
) -> None:
    recs = recordings["pong"]
    result = export_dataset(
        _inputs(recs),
        ExportOptions(name="ds", beam=BeamConfig(workers=2, running_mode="multi_threading")),
        tmp_path / "out",
    )
    expected = [
        expected_episode(
            r, tags=("a", "b"), notes=f"note {r.episode_id}", step_tags=TAGS,
            tag_names=("good", "jump"), replay=v,
        )
        for r, v in zip(recs, exported_verdicts(len(recs)), strict=True)
    ]  # fmt: skip
    save_expected(tmp_path / "expected.npz", expected)
    report = consumer("values", str(result.data_dir), str(tmp_path / "expected.npz"))
    assert report == {
        "mode": "values",
        "episodes": len(recs),
        "steps": sum(r.num_steps for r in recs),
    }


def test_runner_configuration_from_settings() -> None:
    flink = BeamConfig.from_settings(
        "FlinkRunner", "--flink_master=jm:8081 --environment_config='{\"a\": 1}'", 0, "in_memory"
    )
    assert flink.workers >= 1 and not flink.direct
    assert flink.flags() == [
        "--runner=FlinkRunner",
        "--default_sdk_harness_log_level=WARNING",
        "--flink_master=jm:8081",
        '--environment_config={"a": 1}',
    ]
    direct = BeamConfig.from_settings("DirectRunner", "", 3, "multi_threading")
    assert direct.flags()[2:] == ["--direct_num_workers=3", "--direct_running_mode=multi_threading"]
    with pytest.raises(ValueError, match="running mode"):
        BeamConfig(running_mode="threads")


def test_progress_pipe_broken_stops_the_export(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    def progress(done: int, total: int, steps: int) -> None:  # the app following the job died
        raise BrokenPipeError("the app is gone")

    options = ExportOptions(name="ds", beam=BeamConfig(workers=2, running_mode="multi_threading"))
    with pytest.raises(BrokenPipeError):
        export_dataset(_inputs(recordings["pong"]), options, tmp_path / "out", progress=progress)
    assert list(tmp_path.iterdir()) == []
