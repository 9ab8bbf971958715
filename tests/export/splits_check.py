"""A dataset export's splits as each library sees them, run in that library's consumer venv.

Usage:
    splits_check.py tfds <data_dir>                  (.consumer-venv)
    splits_check.py lerobot <root> <repo_id>         (.consumer-venv-lerobot)
    splits_check.py minari <datasets_path> <id>...   (.consumer-venv-minari)

Prints one JSON line: per split, the episode ids it holds in the order the library gives
them (tfds: ``builder.info.splits`` with each split's shards; lerobot: ``meta.info["splits"]``
ranges, each loaded with ``LeRobotDataset(episodes=...)``; minari: each dataset id's).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def tfds_splits(data_dir: str) -> dict[str, Any]:
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(data_dir)
    out: dict[str, Any] = {}
    for name, info in builder.info.splits.items():
        ds = builder.as_dataset(split=name)
        # the OXE profile keeps the episode fields under episode_metadata
        ids = [e.get("episode_metadata", e)["episode_id"].numpy().decode() for e in ds]
        out[name] = {"episodes": ids, "num_examples": info.num_examples,
                     "shards": info.num_shards}  # fmt: skip
    return out


def lerobot_splits(root: str, repo_id: str) -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    whole = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    out: dict[str, Any] = {}
    for name, span in whole.meta.info["splits"].items():
        start, end = map(int, span.split(":"))
        part = LeRobotDataset(repo_id, root=root, episodes=list(range(start, end)),
                              video_backend="pyav")  # fmt: skip
        indices = sorted({int(part[i]["episode_index"]) for i in range(len(part))})
        out[name] = {
            "range": span,
            "episodes": [whole.meta.episodes[i]["episode_id"] for i in indices],
            "frames": len(part),
        }
    return out


def minari_splits(path: str, *ids: str) -> dict[str, Any]:
    os.environ["MINARI_DATASETS_PATH"] = path
    import minari

    out: dict[str, Any] = {}
    for dataset_id in ids:
        dataset = minari.load_dataset(dataset_id)
        metadata = dataset.storage.get_episode_metadata(range(dataset.total_episodes))
        out[dataset_id] = {"episodes": [m["episode_id"] for m in metadata]}
    return out


def main(argv: list[str]) -> None:
    mode, *args = argv
    found = {"tfds": tfds_splits, "lerobot": lerobot_splits, "minari": minari_splits}[mode](*args)
    print(json.dumps({"mode": mode, "splits": found}))


if __name__ == "__main__":
    main(sys.argv[1:])
