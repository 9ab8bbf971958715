"""LeRobot export checked by lerobot itself, run with .consumer-venv-lerobot/bin/python.

Usage:
    lerobot_check.py <docs/export.md> <export_dir> <name> <expected.npz> <frames_out.npz>

Runs the LeRobot loading snippet of docs/export.md (placeholders replaced), reads every
frame through ``dataset[i]`` and compares every non-video value with the expected RLDS
episodes, the timestamps with the recorded step times, tasks, counts and stats.json with the
loaded values. Decoded video frames go to ``frames_out.npz`` (uint8, H x W x 3, key
``<episode>|<video key>``) for the caller to compare with the recorded frames (PSNR).
Prints one JSON line; exits non-zero on the first mismatch.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from consumer_check import check_judgements, compare, fail, load_expected  # noqa: E402

EPISODE_FIELDS = ("agent_id", "status", "notes", "study_id", "env_id", "env_config",
                  "player_outcome", "reviewer_outcome", "replay_verdict",
                  "replay_message", "task_id", "language_instruction", "ended_by",
                  "env_outcome")  # fmt: skip
RENAMED = {
    "reward": "next.reward",
    "discount": "discount",
    "is_first": "is_first",
    "is_last": "is_last",
    "is_terminal": "is_terminal",
    "info": "info",
    "input": "input",
    "camera": "camera",
    "narration": "narration",
}


def doc_snippet(doc: str) -> str:
    """The first python block of the doc's "LeRobot format" section."""
    section = doc.split("## LeRobot format", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        fail("no python snippet in the LeRobot section of docs/export.md")
    assert match is not None
    return match.group(1)


def feature_name(key: str, video_keys: set[str]) -> str | None:
    """The LeRobot feature of an expected ``steps/...`` key (None: a video, checked apart)."""
    rest = key[len("steps/") :]
    if rest == "frame":
        return None
    if rest in RENAMED:
        return RENAMED[rest]
    if rest.startswith("timing/"):
        return "timing." + rest[len("timing/") :]
    if rest.startswith("control/"):  # shared autonomy, as lerobot's human-in-the-loop marks it
        name = rest[len("control/") :].replace("/", ".")
        return "complementary_info." + ("control_source" if name == "source" else name)
    if rest.startswith("tag:"):
        return rest
    for source in ("observation", "action"):
        if rest == source:
            single = "observation.state" if source == "observation" else "action"
            return None if "observation.image" in video_keys and source == "observation" else single
        if rest.startswith(source + "/"):
            path = rest[len(source) + 1 :].replace("/", ".")
            if f"{source}.images.{path}" in video_keys:
                return None
            return f"{source}.{path}"
    fail(f"no LeRobot feature for {key}")
    return None


def arrow_values(column: Any) -> np.ndarray:
    """An Arrow column's values, flat, in their stored dtype (strings as str)."""
    import pyarrow as pa

    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return np.asarray(arr.to_pylist(), dtype=str)
    while (
        pa.types.is_list(arr.type)
        or pa.types.is_fixed_size_list(arr.type)
        or pa.types.is_large_list(arr.type)
    ):
        arr = arr.flatten()
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def as_numpy(value: Any) -> Any:
    if hasattr(value, "numpy"):
        return value.numpy()
    return value


def main(doc_path: str, export_dir: str, name: str, expected_path: str, frames_out: str) -> None:
    code = doc_snippet(Path(doc_path).read_text())
    code = code.replace("<export>", export_dir).replace("<name>", name)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/export.md (LeRobot snippet)", "exec"), scope)
    dataset = scope["dataset"]
    expected = load_expected(expected_path)
    video_keys = set(dataset.meta.video_keys)
    if dataset.num_episodes != len(expected):
        fail(f"{dataset.num_episodes} episodes != {len(expected)}")
    if dataset.num_frames != sum(int(e["_length"]) for e in expected):
        fail(f"{dataset.num_frames} frames != {sum(int(e['_length']) for e in expected)}")
    if dataset.meta.info["codebase_version"] != "v3.0":
        fail(f"codebase_version {dataset.meta.info['codebase_version']}")
    episodes = dataset.meta.episodes
    # the stored values as lerobot loaded them (its hf_dataset), without the torch conversion
    # (datasets' numpy format would turn float64 into float32 too)
    exact = dataset.hf_dataset.with_format("arrow")
    loaded: dict[str, list[np.ndarray]] = {}
    frames: dict[str, np.ndarray] = {}
    index = 0
    for ep_index, want in enumerate(expected):
        eid = str(want["episode_id"])
        meta = episodes[ep_index]
        if meta["episode_id"] != eid:
            fail(f"episode {ep_index}: episode_id {meta['episode_id']} != {eid}")
        for key in EPISODE_FIELDS:
            compare(f"{eid} {key}", meta[key], str(want[key]))
        compare(f"{eid} tags", np.asarray(meta["episode_tags"], dtype=str), want["tags"])
        # LeRobot's "outcome" says how the episode ended: the success label is success_outcome
        compare(f"{eid} success_outcome", meta["success_outcome"], str(want["outcome"]))
        check_judgements(eid, meta, want)
        for key in ("seed", "replay_step"):
            if meta[key] != int(want[key]):
                fail(f"{eid}: {key} {meta[key]} != {want[key]}")
        n = int(want["_length"])
        if meta["length"] != n or list(meta["tasks"]) != [str(want["_task"])]:
            fail(f"{eid}: length {meta['length']} / tasks {meta['tasks']} != {n} / {want['_task']}")
        items = [dataset[index + t] for t in range(n)]
        index += n
        for t, item in enumerate(items):
            if int(item["episode_index"]) != ep_index or int(item["frame_index"]) != t:
                fail(f"{eid} step {t}: episode/frame index {item['episode_index']}")
            if item["task"] != str(want["_task"]):
                fail(f"{eid} step {t}: task {item['task']!r} != {want['_task']!r}")
            # the narration as lerobot's subtask support gives it (meta/subtasks.parquet)
            narration = str(want["steps/narration"][t])
            if item.get("subtask") != narration:
                fail(f"{eid} step {t}: subtask {item.get('subtask')!r} != {narration!r}")
        got_ts = np.asarray([float(item["timestamp"]) for item in items])
        if np.abs(got_ts - want["_times"]).max() > 1e-4:
            fail(f"{eid}: timestamps {got_ts[:5]} != recorded {want['_times'][:5]}")
        rows = exact[index - n : index]
        for key, value in want.items():
            if not key.startswith("steps/"):
                continue
            feature = feature_name(key, video_keys)
            if feature is None:
                continue
            value = np.asarray(value)
            dtype = dataset.meta.features[feature]["dtype"]
            # exact: the loaded table (lerobot's hf_dataset), dtype and value
            stored = arrow_values(rows[feature])
            if dtype == "string":
                compare(f"{eid} {feature}", stored.astype(str), value)
                compare(f"{eid} {feature} (item)", np.asarray([i[feature] for i in items]), value)
                continue
            stored = stored.reshape(value.shape)
            if stored.dtype != value.dtype:
                fail(f"{eid} {feature}: stored dtype {stored.dtype} != {value.dtype}")
            compare(f"{eid} {feature}", stored, value)
            loaded.setdefault(feature, []).append(stored.reshape(n, -1))
            # dataset[i]: lerobot makes tensors from Python values (float64 -> float32,
            # integers -> int64): equal to the recorded value in that dtype
            got = np.stack([np.asarray(as_numpy(item[feature])) for item in items])
            compare(f"{eid} {feature} (item)", got.reshape(value.shape), value.astype(got.dtype))
        if "steps/control/source" in want:  # 1 where the player drove, as lerobot's HIL marks
            player = (np.asarray(want["steps/control/source"]) == 0).astype(np.float32)
            key = "complementary_info.is_intervention"
            got = np.stack([np.asarray(as_numpy(item[key])) for item in items]).reshape(-1)
            compare(f"{eid} {key}", got, player)
        done = np.stack([bool(item["next.done"]) for item in items])
        compare(f"{eid} next.done", done, np.arange(n) == n - 1)
        for key in video_keys:
            chw = np.stack([as_numpy(item[key]) for item in items])  # float [0, 1], C x H x W
            frames[f"{ep_index}|{key}"] = np.round(chw * 255).astype(np.uint8).transpose(0, 2, 3, 1)
    # meta/tasks.parquet: one row per distinct instruction, in the order first met; the
    # same for the narrations in meta/subtasks.parquet
    tasks = list(dict.fromkeys(str(e["_task"]) for e in expected))
    got_tasks = dataset.meta.tasks
    if list(got_tasks.index) != tasks or list(got_tasks["task_index"]) != list(range(len(tasks))):
        fail(f"tasks.parquet {got_tasks} != {tasks}")
    subtasks = list(dict.fromkeys(str(t) for e in expected for t in e["steps/narration"]))
    got_subtasks = dataset.meta.subtasks
    if got_subtasks is None or list(got_subtasks.index) != subtasks:
        fail(f"subtasks.parquet {got_subtasks} != {subtasks}")
    check_stats(dataset.meta.stats, loaded, frames, video_keys)
    np.savez(frames_out, **frames)
    print(
        json.dumps(
            {
                "mode": "lerobot",
                "episodes": dataset.num_episodes,
                "frames": dataset.num_frames,
                "fps": dataset.fps,
                "videos": sorted(video_keys),
                "tasks": tasks,
                "subtasks": subtasks,
            }
        )
    )


def check_stats(
    stats: dict[str, Any],
    loaded: dict[str, list[np.ndarray]],
    frames: dict[str, np.ndarray],
    video_keys: set[str],
) -> None:
    """stats.json against the loaded values (exact statistics over every exported step)."""
    for feature, chunks in loaded.items():
        if feature not in stats:
            fail(f"stats.json has no {feature}")
        data = np.concatenate(chunks).astype(np.float64)
        want = {
            "min": data.min(0),
            "max": data.max(0),
            "mean": data.mean(0),
            "std": data.std(0),
            "q50": np.quantile(data, 0.5, axis=0),
        }
        for key, value in want.items():
            got = np.asarray(stats[feature][key], dtype=np.float64).reshape(-1)
            if not np.allclose(got, value.reshape(-1), rtol=1e-6, atol=1e-9):
                fail(f"stats {feature}/{key}: {got[:4]} != {value.reshape(-1)[:4]}")
        if int(np.asarray(stats[feature]["count"]).reshape(-1)[0]) != len(data):
            fail(f"stats {feature}/count {stats[feature]['count']} != {len(data)}")
    for key in video_keys:
        pixels = np.concatenate(
            [v.reshape(-1, 3) for k, v in frames.items() if k.endswith(f"|{key}")]
        ).astype(np.float64)
        mean = np.asarray(stats[key]["mean"]).reshape(-1)
        if not np.allclose(mean, pixels.mean(0) / 255.0, atol=1e-6):
            fail(f"stats {key}/mean {mean} != {pixels.mean(0) / 255.0}")


if __name__ == "__main__":
    main(*sys.argv[1:])
