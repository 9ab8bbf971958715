"""LeRobot v3 exports read back with pyarrow and PyAV (the lerobot library's own loading is in
test_lerobot_consumer.py), the mapping rule, and the fields the format refuses by name."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from dm_env import specs

from server.export import ExportError, ExportOptions, TaggedSpan, export_dataset
from server.export.episode import EnvSpecs
from server.export.formats.lerobot.dataset import FRAME_KEY, features_of
from server.export.video import decode_jpeg, read_video
from tests.export.conftest import episode_input, make_cartpole
from tests.export.recordings import Recording, record_episode

REWARD = specs.Array((), np.float64)


def _names(obs: object, action: object) -> dict[str, tuple[str, tuple[int, ...]]]:
    cols = features_of(
        EnvSpecs(obs, action, REWARD, REWARD), keep_step_metadata=False, tag_names=()
    )
    return {c.name: (c.dtype, c.shape) for c in cols}


def test_mapping_rule() -> None:
    flat = _names(specs.Array((4,), np.float32), specs.DiscreteArray(2))
    assert flat["observation.state"] == ("float32", (4,))
    assert flat["action"] == ("int64", (1,))
    assert flat["next.reward"] == ("float64", (1,)) and flat["next.done"] == ("bool", (1,))
    image = _names(specs.Array((210, 160, 3), np.uint8), specs.Array((2,), np.float32))
    assert image["observation.image"] == ("video", (210, 160, 3))
    nested = _names(
        {"image": specs.Array((28, 28, 3), np.uint8), "grid": specs.Array((7, 7, 3), np.uint8)},
        {"move": specs.Array((2,), np.int32)},
    )
    assert nested["observation.images.image"] == ("video", (28, 28, 3))
    assert nested["observation.grid"] == ("uint8", (7, 7, 3))  # too small to be a picture
    assert nested["action.move"] == ("int32", (2,))


@pytest.mark.parametrize(
    ("obs", "message"),
    [
        (
            (specs.Array((2,), np.float32), specs.Array((2,), np.float32)),
            "field observation: Tuple",
        ),
        ({"a": {"b": specs.Array((2,), np.str_)}}, "field observation/a/b: LeRobot holds scalar"),
        ({"x": specs.Array((1, 1, 1, 1, 1, 1), np.float32)}, "field observation/x: 6-d"),
        ({"c": specs.Array((2,), np.complex64)}, "field observation/c: complex64"),
        (
            {
                "images": {"x": specs.Array((3,), np.float32)},
                "images.x": specs.Array((3,), np.float32),
            },
            "taken",
        ),
    ],
)
def test_refused_fields_are_named(obs: object, message: str) -> None:
    with pytest.raises(ExportError, match=message.replace(".", r"\.")):
        _names(obs, specs.DiscreteArray(2))


def test_refused_before_writing(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    rec = recordings["cartpole"][0]
    tags = (TaggedSpan("a/b", 0, 0),)
    with pytest.raises(ExportError, match="step tag 'a/b'"):
        export_dataset(
            [episode_input(rec, step_tags=tags)],
            ExportOptions(name="x", format="lerobot"),
            tmp_path / "out",
        )
    assert not (tmp_path / "out").exists()


def test_layout_values_and_timestamps(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["pong"]
    labels = {"outcome": "success", "player_outcome": "", "reviewer_outcome": "success"}
    inputs = [episode_input(r, tags=("good",), notes="fine", outcomes=labels) for r in recs]
    options = ExportOptions(name="pong", format="lerobot")
    result = export_dataset(inputs, options, tmp_path / "out")
    root = result.path / "pong"
    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert info["total_episodes"] == 2 and info["total_frames"] == sum(r.num_steps for r in recs)
    assert info["features"]["observation.image"]["dtype"] == "video"
    data = pq.read_table(root / "data/chunk-000/file-000.parquet").to_pydict()
    assert data["episode_index"] == [0] * recs[0].num_steps + [1] * recs[1].num_steps
    first = recs[0]
    applied = [t["applied"] for t in first.timings]
    want_ts = [(a - applied[0]) / 1000 for a in applied]
    np.testing.assert_allclose(data["timestamp"][: first.num_steps], want_ts, atol=1e-6)
    assert data["action"][: first.num_steps - 1] == [int(a) for a in first.actions]
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [e["episode_id"] for e in episodes] == ["pong-1", "pong-2"]
    assert episodes[0]["episode_tags"] == ["good"] and episodes[0]["notes"] == "fine"
    assert episodes[0]["outcome"] in ("terminated", "truncated")  # how it ended
    keys = ("success_outcome", "player_outcome", "reviewer_outcome")
    assert [episodes[0][k] for k in keys] == ["success", "", "success"]
    assert episodes[1]["dataset_from_index"] == first.num_steps
    # the player's frames and the image observations, exactly (lossless H.264)
    for key, want in (
        (FRAME_KEY, [decode_jpeg(f) for f in first.frames]),
        ("observation.image", [np.asarray(o) for o in first.observations]),
    ):
        frames, times = read_video(root / f"videos/{key}/chunk-000/file-000.mp4")
        assert len(frames) == sum(r.num_steps for r in recs)
        for got, exp in zip(frames, want, strict=False):
            np.testing.assert_array_equal(got, exp)
        np.testing.assert_allclose(times[: first.num_steps], want_ts, atol=1e-6)
        start = episodes[1][f"videos/{key}/from_timestamp"]
        assert times[first.num_steps] == pytest.approx(start)
    stats = json.loads((root / "meta/stats.json").read_text())
    assert stats["next.reward"]["count"] == [info["total_frames"]]
    assert np.asarray(stats["observation.image"]["mean"]).shape == (3, 1, 1)


def test_files_roll_over(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    recs = recordings["cartpole"]
    options = ExportOptions(name="cp", format="lerobot", max_episodes_per_shard=2)
    result = export_dataset([episode_input(r) for r in recs], options, tmp_path / "out")
    root = result.path / "cp"
    assert sorted(p.name for p in (root / "data/chunk-000").iterdir()) == [
        "file-000.parquet",
        "file-001.parquet",
    ]
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [e["data/file_index"] for e in episodes] == [0, 0, 1]
    assert episodes[2][f"videos/{FRAME_KEY}/from_timestamp"] == 0.0


def test_bad_value_names_episode_step_and_field(tmp_path: Path) -> None:
    rec = record_episode(
        make_cartpole(6), tmp_path / "log", env_id="CartPole-v1", episode_id="bad-1", seed=1,
        bad_timing={3: {"input_sent": math.nan}, 4: {"applied": math.inf}},
    )  # fmt: skip
    options = ExportOptions(name="bad", format="lerobot")
    with pytest.raises(ExportError) as caught:
        export_dataset([episode_input(rec)], options, tmp_path / "out")
    assert str(caught.value).startswith("episode bad-1: step 2, field timing/input_sent_ms: ")
    assert not (tmp_path / "out").exists()


def test_unknown_step_times_follow_the_median_interval(tmp_path: Path) -> None:
    rec = record_episode(
        make_cartpole(6), tmp_path / "log", env_id="CartPole-v1", episode_id="gap-1", seed=1,
        bad_timing={2: {"applied": math.inf}},
    )  # fmt: skip
    options = ExportOptions(name="gap", format="lerobot", keep_step_metadata=False)
    result = export_dataset([episode_input(rec)], options, tmp_path / "out")
    data = pq.read_table(result.path / "gap/data/chunk-000/file-000.parquet").to_pydict()
    applied = [t["applied"] for t in rec.timings]
    ms = [round(t * 1000) for t in data["timestamp"]]
    assert ms[:2] == [0, applied[1] - applied[0]]
    assert ms[2] == ms[1] + (applied[4] - applied[3])  # unknown: + the median interval
    assert ms[3:] == [a - applied[0] for a in applied[3:]]


def test_videos_option_adds_an_mp4_per_episode_to_any_format(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    from server.export.video import PLAYABLE_PSNR_DB, psnr

    recs = recordings["pong"]
    cut = (TaggedSpan("end", 5, 5),)
    inputs = [episode_input(recs[0], step_tags=cut), episode_input(recs[1])]
    options = ExportOptions(name="m", format="minari", end_tags=("end",), videos=True)
    result = export_dataset(inputs, options, tmp_path / "out")
    assert "episode_videos/" in (result.path / "README.md").read_text()
    for rec, length in ((recs[0], 6), (recs[1], recs[1].num_steps)):
        frames, times = read_video(result.path / "episode_videos" / f"{rec.episode_id}.mp4")
        assert len(frames) == length  # an end tag cuts the video too
        applied = [t["applied"] for t in rec.timings[:length]]
        np.testing.assert_allclose(times, [(a - applied[0]) / 1000 for a in applied], atol=1e-6)
        worst = min(psnr(f, decode_jpeg(j)) for f, j in zip(frames, rec.frames, strict=False))
        assert worst >= PLAYABLE_PSNR_DB, worst


def test_video_stats_equal_numpy_over_every_pixel() -> None:
    from server.export.formats.lerobot.stats import Stats

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (7, 5, 3), dtype=np.uint8) for _ in range(4)]
    frames[1][:, :, 2] = 17  # a channel with few distinct values
    stats = Stats()
    for frame in frames:
        stats.add_frame("v", frame)
    got = stats.to_json({})["v"]
    pixels = np.concatenate([f.reshape(-1, 3) for f in frames]).astype(np.float64) / 255
    assert got["count"] == [4]
    for key, want in (
        ("min", pixels.min(0)),
        ("max", pixels.max(0)),
        ("mean", pixels.mean(0)),
        ("std", pixels.std(0)),
        ("q01", np.quantile(pixels, 0.01, axis=0)),
        ("q50", np.quantile(pixels, 0.5, axis=0)),
        ("q99", np.quantile(pixels, 0.99, axis=0)),
    ):
        np.testing.assert_allclose(np.asarray(got[key]).reshape(3), want, rtol=1e-12, atol=1e-12)
        assert np.asarray(got[key]).shape == (3, 1, 1)


def test_frames_pixel_counts_equal_numpy_counts_of_every_frame() -> None:
    from server.export.formats.lerobot.stats import frames_pixel_counts

    rng = np.random.default_rng(1)
    frame = rng.integers(0, 256, (30, 20, 3), dtype=np.uint8)
    frames = [frame]
    for step in range(12):
        frame = frame.copy()
        if step == 5:  # most values change: counted whole
            frame = rng.integers(0, 256, frame.shape, dtype=np.uint8)
        else:  # a few pixels change, in one channel or all three
            ys, xs = rng.integers(0, 30, 9), rng.integers(0, 20, 9)
            frame[ys, xs, step % 3] = rng.integers(0, 256, 9, dtype=np.uint8)
            frame[ys[:3], xs[:3]] = 0
        frames.append(frame)
    frames.append(frames[-1])  # unchanged
    frames.append(rng.integers(0, 256, (10, 60, 3), dtype=np.uint8))  # same size, other shape
    frames.append(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8))  # another size
    frames.append(frames[-1][:, ::-1])  # a view, not contiguous
    want = sum(_counts(f) for f in frames)
    np.testing.assert_array_equal(frames_pixel_counts(frames), want)
    np.testing.assert_array_equal(frames_pixel_counts(frames[:1]), _counts(frames[0]))
    assert frames_pixel_counts([]).shape == (3, 256)


def _counts(frame: np.ndarray) -> np.ndarray:
    return np.stack([np.bincount(frame[:, :, c].reshape(-1), minlength=256) for c in range(3)])


def test_episodes_encoded_apart_decode_as_one_exact_video(tmp_path: Path) -> None:
    """Episodes are encoded on several encoders (one per export thread, several episodes
    each) and muxed in order into one file: it decodes to every frame exactly, at its time;
    a part encoded with other settings, of another size or not after the file's last is
    refused, and an encoder that would hold frames back (for the next part) too."""
    from dataclasses import replace

    from server.export.video import LOSSLESS, PLAYABLE, FrameEncoder, VideoWriter

    rng = np.random.default_rng(3)
    parts = []
    for n in (3, 12, 1, 5):
        base = rng.integers(0, 256, (18, 26, 3), dtype=np.uint8)
        frames = [base.copy() for _ in range(n)]
        for i, frame in enumerate(frames):
            frame[i % 18, :, i % 3] = rng.integers(0, 256, 26, dtype=np.uint8)
        parts.append((frames, [t * 40 for t in range(n)]))
    path = tmp_path / "v.mp4"
    writer = VideoWriter(path, 26, 18, LOSSLESS, threads=1)
    encoders = [FrameEncoder(26, 18), FrameEncoder(26, 18)]
    start, want, want_times = 0, [], []
    for i, (frames, times) in enumerate(parts):
        writer.mux(encoders[i % 2].encode(frames, times), start)
        want += frames
        want_times += [(start + t) / 1000 for t in times]
        start += times[-1] + 40
    with pytest.raises(ValueError, match="not after"):
        writer.mux(encoders[0].encode(*parts[0]), start - 40)
    lossy = replace(LOSSLESS, options={**LOSSLESS.options, "crf": "10"})
    with pytest.raises(ValueError, match="other settings"):
        writer.mux(FrameEncoder(26, 18, lossy).encode(*parts[0]), start)
    with pytest.raises(ValueError, match="frames of 26x18 in a 26x20"):
        VideoWriter(tmp_path / "w.mp4", 26, 20).mux(encoders[1].encode(*parts[2]), 0)
    with pytest.raises(ValueError, match="packets for 12 frames"):
        FrameEncoder(26, 18, PLAYABLE).encode(*parts[1])  # its lookahead holds frames back
    writer.close()
    got, got_times = read_video(path)
    assert len(got) == len(want) == 21
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert got_times == pytest.approx(want_times)
