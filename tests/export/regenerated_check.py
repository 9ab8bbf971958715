"""What a regenerated export holds, as researchers load it (tests/export/test_regenerate.py).

Usage:
    regenerated_check.py rlds <data_dir>                  (.consumer-venv: TFDS + rlds)
    regenerated_check.py lerobot <export_dir> <name>      (.consumer-venv-lerobot)

Prints one JSON line: per episode its id, env_config, the observation's shapes, the rewards,
state vectors, infos and terminal flags (rlds); the frames, rewards and image shapes
(lerobot, loaded with docs/export.md's snippet).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def rlds_report(data_dir: str) -> dict[str, Any]:
    import rlds
    import tensorflow_datasets as tfds

    ds = tfds.builder_from_directory(data_dir).as_dataset(split="train")
    episodes = []
    for episode in ds:
        steps = episode["steps"]
        length = int(rlds.transformations.episode_length(steps))
        rows = list(steps.as_numpy_iterator())
        if length != len(rows):
            raise SystemExit(f"rlds says {length} steps, the dataset holds {len(rows)}")
        observation = rows[0]["observation"]
        episodes.append({
            "episode_id": episode["episode_id"].numpy().decode(),
            "env_config": episode["env_config"].numpy().decode(),
            "observation": {k: list(np.shape(v)) for k, v in sorted(observation.items())},
            "shapes_every_step": sorted({
                json.dumps({k: list(np.shape(v)) for k, v in r["observation"].items()},
                           sort_keys=True) for r in rows}),
            "reward": [float(r["reward"]) for r in rows],
            "state": [r["observation"]["state"].tolist() for r in rows],
            "infos": [r["info"].decode() for r in rows],
            "is_terminal": [bool(r["is_terminal"]) for r in rows],
            "return": float(rlds.transformations.sum_dataset(steps, lambda s: s["reward"])),
        })  # fmt: skip
    return {"episodes": episodes}


def lerobot_report(export_dir: str, name: str) -> dict[str, Any]:
    from lerobot_check import arrow_values, doc_snippet

    doc = (HERE.parents[1] / "docs" / "export.md").read_text()
    code = doc_snippet(doc).replace("<export>", export_dir).replace("<name>", name)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/export.md (LeRobot snippet)", "exec"), scope)
    dataset = scope["dataset"]
    exact = dataset.hf_dataset.with_format("arrow")
    item = dataset[0]
    keys = [k for k in dataset.meta.video_keys if k != "observation.images.frame"]
    return {
        "frames": int(dataset.num_frames),
        "reward": arrow_values(exact[0 : dataset.num_frames]["next.reward"]).tolist(),
        "reward_dtype": dataset.meta.features["next.reward"]["dtype"],
        "shapes": {k: list(item[k].shape) for k in keys},
    }


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    report = rlds_report(*args) if mode == "rlds" else lerobot_report(*args)
    print(json.dumps(report))
