"""Consumer-side checks of an export, run with .consumer-venv/bin/python (real TF, tfds, rlds).

Usage:
    consumer_check.py values <data_dir> <expected.npz> [split]
    consumer_check.py reference <data_dir> <logs_root> <work_dir>
    consumer_check.py envlogger <export_dir> <expected.npz>
    consumer_check.py reference-time <data_dir> <logs_root> <work_dir>   (benchmarks/export.py)
    consumer_check.py oxe <docs/export.md> <export_dir> <name> <expected.npz>

Each mode prints one JSON line of what it checked and exits non-zero on the first mismatch.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

# feedback studies' judgements: their exact Python values and types (bool, int, float)
JUDGEMENT_FIELDS = ("judged", "judgement_wins", "judgement_losses", "judgement_ties",
                    "judgement_ratings", "judgement_mean_rating")  # fmt: skip


def fail(message: str) -> None:
    """Stop with a mismatch."""
    print(f"MISMATCH: {message}", file=sys.stderr)
    sys.exit(1)


def load_expected(path: str) -> list[dict[str, Any]]:
    """The expected episodes saved by tests/export/expected.py."""
    data = np.load(path)
    episodes: dict[int, dict[str, Any]] = defaultdict(dict)
    for key in data.files:
        parts = key.split("|")
        index = int(parts[0])
        if parts[1] == "jpeg":
            blob = data[key].tobytes()
            offsets = data[f"{index}|jpegoff|{parts[2]}"]
            episodes[index][parts[2]] = [
                blob[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)
            ]
        elif parts[1] != "jpegoff":
            episodes[index][parts[1]] = data[key]
    return [episodes[i] for i in sorted(episodes)]


def check_judgements(eid: str, meta: Any, want: dict[str, Any]) -> None:
    """The episode's judgement fields: the expected values, of the expected Python types."""
    for key in JUDGEMENT_FIELDS:
        got, value = meta[key], want[key].item()
        if type(got) is not type(value) or got != value:
            fail(f"{eid}: {key} {got!r} != {value!r}")


def flatten_episode(episode: dict[str, Any]) -> dict[str, Any]:
    """A TF episode as flat numpy values: ``steps/<path>`` stacked over steps."""
    out: dict[str, Any] = {}
    steps = list(episode["steps"].as_numpy_iterator())

    def walk(prefix: str, values: list[Any]) -> None:
        if isinstance(values[0], dict):
            for key in values[0]:
                walk(f"{prefix}/{key}", [v[key] for v in values])
        else:
            out[prefix] = np.stack(values)

    if steps:
        walk("steps", steps)
    for key, value in episode.items():
        if key != "steps":
            out[key] = value.numpy()
    return out


def as_text(value: Any) -> Any:
    """bytes (or arrays of bytes) from TF as str."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray) and value.dtype.kind in "OS":
        return np.asarray([v.decode() for v in value.reshape(-1)]).reshape(value.shape)
    return value


def compare(name: str, got: Any, want: Any) -> None:
    """Exact equality of values, dtype kinds aside (str vs bytes)."""
    got, want = as_text(got), as_text(want)
    if isinstance(want, np.ndarray) and want.dtype.kind == "U":
        got = np.asarray(got).astype(str)
    got_arr, want_arr = np.asarray(got), np.asarray(want)
    if got_arr.shape != want_arr.shape:
        fail(f"{name}: shape {got_arr.shape} != expected {want_arr.shape}")
    if not np.array_equal(got_arr, want_arr):
        fail(f"{name}: values differ\n got {got_arr!r}\nwant {want_arr!r}")


def check_values(data_dir: str, expected_path: str, split: str = "train") -> None:
    """Every episode of ``split``, step and value as recorded; then rlds transformations."""
    import rlds
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(data_dir)
    ds = builder.as_dataset(split=split)
    expected = {str(e["episode_id"]): e for e in load_expected(expected_path)}
    step_features = builder.info.features["steps"]
    seen, steps_checked = set(), 0
    for episode in ds:
        flat = flatten_episode(episode)
        episode_id = as_text(flat["episode_id"])
        want = expected.get(episode_id)
        if want is None:
            fail(f"unexpected episode {episode_id}")
        seen.add(episode_id)
        got_keys = set(flat)
        want_keys = {k for k in want if not k.startswith("_")}
        if got_keys != want_keys:
            fail(f"{episode_id}: fields {sorted(got_keys ^ want_keys)} differ")
        for key in sorted(want_keys):
            value = want[key]
            if key == "steps/frame":  # JPEG bytes: decode them as TFDS does
                value = np.stack([step_features["frame"].decode_example(v).numpy() for v in value])
            compare(f"{episode_id} {key}", flat[key], value)
        steps_checked += len(flat["steps/is_first"])

        # rlds transformations on the same episode.
        steps = episode["steps"]
        length = int(rlds.transformations.episode_length(steps))
        if length != int(want["_length"]):
            fail(f"{episode_id}: rlds episode_length {length} != {want['_length']}")
        batches = list(rlds.transformations.batch(steps, size=2, shift=1, drop_remainder=True))
        if len(batches) != max(length - 1, 0):
            fail(f"{episode_id}: {len(batches)} batches of 2 for {length} steps")
        if batches:
            compare(f"{episode_id} batch[0] reward", batches[0]["reward"], want["steps/reward"][:2])
        cut = rlds.transformations.truncate_after_condition(steps, lambda s: s["is_last"])
        cut_len = int(rlds.transformations.episode_length(cut))
        if cut_len != length:
            fail(f"{episode_id}: truncate_after_condition(is_last) gave {cut_len} != {length}")
        cut1 = rlds.transformations.truncate_after_condition(steps, lambda s: s["is_first"])
        if int(rlds.transformations.episode_length(cut1)) != 1:
            fail(f"{episode_id}: truncate_after_condition(is_first) kept more than one step")
    if seen != set(expected):
        fail(f"episodes missing: {sorted(set(expected) - seen)}")
    total = float(rlds.transformations.sum_nested_steps(ds, lambda s: s["reward"]))
    want_total = sum(float(e["_return"]) for e in expected.values())
    if not np.isclose(total, want_total, rtol=0, atol=1e-9):
        fail(f"rlds sum_nested_steps of rewards {total} != {want_total}")
    print(json.dumps({"mode": "values", "episodes": len(seen), "steps": steps_checked}))


def _reference_builder(data_dir: str, logs_root: str, work_dir: str) -> Any:
    """TFDS's own RLDS builder over the envlogger logs, with the export's step features."""
    import tensorflow_datasets as tfds
    from tensorflow_datasets.rlds import rlds_base

    ours = tfds.builder_from_directory(data_dir).info.features["steps"]
    step_metadata = {
        "frame": tfds.features.Image(shape=(None, None, 3), encoding_format="jpeg"),
        "input": tfds.features.Text(),
        "timing": tfds.features.Text(),
        "info": tfds.features.Text(),
        "control": tfds.features.Text(),  # raw JSON there (shared autonomy; "null" without)
    }

    # not registered by name: several checks run in one process (tests/export/consumers.py)
    class ReferenceRlds(tfds.core.GeneratorBasedBuilder, skip_registration=True):
        VERSION = tfds.core.Version("1.0.0")
        BUILDER_CONFIGS = [
            rlds_base.DatasetConfig(
                name="reference",
                observation_info=ours["observation"],
                action_info=ours["action"],
                reward_info=ours["reward"],
                discount_info=ours["discount"],
                step_metadata_info=step_metadata,
            )
        ]

        def _info(self) -> Any:
            return rlds_base.build_info(self.builder_config, self)

        def _split_generators(self, dl_manager: Any) -> Any:
            return {"train": self._generate_examples(Path(logs_root))}

        def _generate_examples(self, path: Path) -> Any:
            return rlds_base.generate_examples(path)

    return ReferenceRlds(data_dir=work_dir)


def check_reference(data_dir: str, logs_root: str, work_dir: str) -> None:
    """Our export holds the same tensors as TFDS's own RLDS reader of the same logs."""
    import tensorflow_datasets as tfds

    started = time.perf_counter()
    ref_builder = _reference_builder(data_dir, logs_root, work_dir)
    ref_builder.download_and_prepare()
    ref = [flatten_episode(e) for e in ref_builder.as_dataset(split="train")]
    ours = [flatten_episode(e) for e in tfds.builder_from_directory(data_dir).as_dataset("train")]
    if len(ref) != len(ours):
        fail(f"reference has {len(ref)} episodes, export {len(ours)}")

    def key(e: dict[str, Any]) -> tuple[int, bytes, str]:
        return (
            len(e["steps/is_first"]),
            np.asarray(next(v for k, v in sorted(e.items()) if "observation" in k)[0]).tobytes(),
            as_text(e["steps/info"][0]),
        )

    by_key = {key(e): e for e in ours}
    same = ["observation", "action", "reward", "discount", "is_first", "is_last", "is_terminal"]
    compared = 0
    for r in ref:
        mine = by_key.get(key(r))
        if mine is None:
            fail("a reference episode has no counterpart in the export")
        for name in sorted(r):
            field = name.split("/")[1] if name.startswith("steps/") else None
            if field in same or field in ("frame", "info"):
                got, want = mine[name], r[name]
                if np.asarray(want).dtype == np.float64:
                    # TFDS's reader stores float64 through tf.train.Example's float32 lists;
                    # the export keeps them exact: equal once rounded as the reference was.
                    got = np.asarray(got).astype(np.float32)
                    want = np.asarray(want).astype(np.float32)
                compare(f"reference {name}", got, want)
                compared += 1
        # By design the export moves `input` to the step of the action it produced.
        compare("input realigned", mine["steps/input"][:-1], r["steps/input"][1:])
        last = as_text(mine["steps/input"][-1])
        if last != "null":
            fail(f"last step input {last!r} != 'null'")
    print(
        json.dumps(
            {
                "mode": "reference",
                "episodes": len(ref),
                "fields_compared": compared,
                "reference_build_s": round(time.perf_counter() - started, 3),
            }
        )
    )


def time_reference(data_dir: str, logs_root: str, work_dir: str) -> None:
    """Time TFDS's own envlogger -> RLDS builder (read logs, encode, write TFRecords)."""
    builder = _reference_builder(data_dir, logs_root, work_dir)
    cpu, started = time.process_time(), time.perf_counter()
    builder.download_and_prepare()
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu  # all of the process's threads (TF's too)
    episodes = builder.info.splits["train"].num_examples
    doc = {"mode": "reference-time", "seconds": seconds, "cpu_seconds": cpu_seconds}
    print(json.dumps({**doc, "episodes": episodes}))


def check_envlogger(export_dir: str, expected_path: str) -> None:
    """The envlogger-format export reads back with envlogger.Reader, tags.json beside it."""
    import envlogger

    count = 0
    for want in load_expected(expected_path):
        episode_id = str(want["episode_id"])
        folder = Path(export_dir) / "episodes" / episode_id
        doc = json.loads((folder / "tags.json").read_text())
        if doc["episode_id"] != episode_id or doc["agent_id"] != str(want["agent_id"]):
            fail(f"{episode_id}: tags.json {doc}")
        for key in ("outcome", "player_outcome", "reviewer_outcome", "replay_verdict",
                    "replay_message", "task_id", "language_instruction", "ended_by",
                    "env_outcome"):  # fmt: skip
            if doc.get(key) != str(want[key]):
                fail(f"{episode_id}: tags.json {key} {doc.get(key)!r} != {want[key]!r}")
        if doc.get("replay_step") != int(want["replay_step"]):
            fail(f"{episode_id}: tags.json replay_step {doc.get('replay_step')!r}")
        with envlogger.Reader(str(folder)) as reader:
            steps = list(reader.steps)
            meta = reader.metadata()
        if meta["episode_id"] != episode_id:
            fail(f"{episode_id}: log metadata {meta['episode_id']}")
        n = int(want["_length"])
        if len(steps) != n:
            fail(f"{episode_id}: {len(steps)} timesteps, expected {n}")
        obs_keys = sorted(k for k in want if k.startswith("steps/observation"))
        for t, step in enumerate(steps):
            for k in obs_keys:
                sub = k.split("/")[2:]
                value = step.timestep.observation
                for part in sub:
                    value = value[part]
                compare(f"{episode_id} {k}[{t}]", value, want[k][t])
            if t > 0:
                compare(f"{episode_id} action[{t - 1}]", step.action, want["steps/action"][t - 1])
                compare(
                    f"{episode_id} reward[{t - 1}]",
                    step.timestep.reward,
                    want["steps/reward"][t - 1],
                )
        count += 1
    print(json.dumps({"mode": "envlogger", "episodes": count}))


def oxe_statistics(rows: np.ndarray) -> dict[str, Any]:
    """Octo's per-dimension statistics of stacked values."""
    rows = rows.reshape(len(rows), -1).astype(np.float64)
    return {
        "mean": rows.mean(0),
        "std": rows.std(0),
        "max": rows.max(0),
        "min": rows.min(0),
        "p99": np.percentile(rows, 99, axis=0),
        "p01": np.percentile(rows, 1, axis=0),
    }


def check_oxe(doc_path: str, export_dir: str, name: str, expected_path: str) -> None:
    """The docs' OXE snippet, every value, and dataset_statistics.json recomputed."""
    import re

    section = Path(doc_path).read_text().split("### Open X-Embodiment profile", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        fail("no python snippet in the OXE section of docs/export.md")
    assert match is not None
    code = match.group(1).replace("<export>", export_dir).replace("<name>", name)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/export.md (OXE snippet)", "exec"), scope)
    ds, statistics, builder = scope["ds"], scope["statistics"], scope["builder"]
    frame_feature = builder.info.features["steps"]["frame"]
    expected = {str(e["episode_metadata/episode_id"]): e for e in load_expected(expected_path)}
    actions, observations, steps_checked = [], defaultdict(list), 0
    for episode in ds:
        flat = flatten_episode({k: v for k, v in episode.items() if k != "episode_metadata"})
        for key, value in episode["episode_metadata"].items():
            flat[f"episode_metadata/{key}"] = value.numpy()
        want = expected[as_text(flat["episode_metadata/episode_id"])]
        want_keys = {k for k in want if not k.startswith("_")}
        if set(flat) != want_keys:
            fail(f"fields {sorted(set(flat) ^ want_keys)} differ")
        for key in sorted(want_keys):
            value = want[key]
            if key == "steps/frame":
                value = np.stack([frame_feature.decode_example(v).numpy() for v in value])
            compare(key, flat[key], value)
        actions.append(flat["steps/action"].reshape(len(flat["steps/action"]), -1))
        for key, value in flat.items():
            if key.startswith("steps/observation/") and not (
                value.dtype == np.uint8 and value.ndim == 4
            ):
                observations[key[len("steps/observation/") :]].append(value)
        steps_checked += len(flat["steps/is_first"])
    if statistics["num_trajectories"] != len(expected) or statistics["num_transitions"] != (
        steps_checked
    ):
        fail(f"counts {statistics['num_trajectories']}, {statistics['num_transitions']}")
    wants = {"action": oxe_statistics(np.concatenate(actions))}
    for key, values in observations.items():
        wants[f"observation/{key}"] = oxe_statistics(np.concatenate(values))
    got_obs = {f"observation/{k}": v for k, v in statistics["observation"].items()}
    if set(got_obs) != set(wants) - {"action"}:
        fail(f"statistics of {sorted(got_obs)} != {sorted(set(wants) - {'action'})}")
    for key, want_stats in wants.items():
        got_stats = statistics["action"] if key == "action" else got_obs[key]
        for stat, value in want_stats.items():
            if not np.allclose(got_stats[stat], value, rtol=1e-12, atol=0):
                fail(f"statistics {key} {stat}: {got_stats[stat]} != {value.tolist()}")
    print(json.dumps({"mode": "oxe", "episodes": len(expected), "steps": steps_checked}))


def main(argv: list[str]) -> None:
    """Dispatch on the mode."""
    mode, *args = argv
    if mode == "values":
        check_values(*args)
    elif mode == "reference":
        check_reference(*args)
    elif mode == "envlogger":
        check_envlogger(*args)
    elif mode == "oxe":
        check_oxe(*args)
    elif mode == "reference-time":
        time_reference(*args)
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
