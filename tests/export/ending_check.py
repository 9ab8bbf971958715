"""How each exported episode ended, as a researcher's library reads it, run with a consumer
venv's Python (TFDS+rlds, lerobot or minari).

Usage:
    ending_check.py rlds <data_dir>
    ending_check.py lerobot <docs/export.md> <export_dir> <name>
    ending_check.py minari <docs/export.md> <export_dir> <dataset_id>

Loads the dataset as docs/export.md says (``tfds.builder_from_directory`` and ``rlds``,
``LeRobotDataset``, ``minari.load_dataset``) and prints one JSON line ``{"mode": "ending",
"episodes": {episode_id: {"ended_by", "env_outcome", "terminal": the last step's
is_terminal (Minari: terminations), "truncated": Minari's last truncation (others: not
terminal), "length": steps (RLDS and LeRobot: observations; Minari: transitions)}}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def rlds_endings(data_dir: str) -> dict[str, Any]:
    import rlds
    import tensorflow_datasets as tfds

    out = {}
    for episode in tfds.builder_from_directory(data_dir).as_dataset(split="train"):
        meta = episode.get("episode_metadata", episode)
        steps = list(episode["steps"].as_numpy_iterator())
        out[meta["episode_id"].numpy().decode()] = {
            "ended_by": meta["ended_by"].numpy().decode(),
            "env_outcome": meta["env_outcome"].numpy().decode(),
            "terminal": bool(steps[-1]["is_terminal"]),
            "truncated": not bool(steps[-1]["is_terminal"]),
            "last": bool(steps[-1]["is_last"]),
            "length": int(rlds.transformations.episode_length(episode["steps"])),
        }
    return out


def lerobot_endings(doc_path: str, export_dir: str, name: str) -> dict[str, Any]:
    from lerobot_check import doc_snippet

    code = doc_snippet(Path(doc_path).read_text())
    scope: dict[str, Any] = {}
    code = code.replace("<export>", export_dir).replace("<name>", name)
    exec(compile(code, "docs/export.md (LeRobot snippet)", "exec"), scope)
    dataset = scope["dataset"]
    frames = dataset.hf_dataset.with_format("python")
    out = {}
    for meta in dataset.meta.episodes:
        first, end = int(meta["dataset_from_index"]), int(meta["dataset_to_index"])
        last = frames[end - 1]
        terminal = bool(last["is_terminal"][0] if isinstance(last["is_terminal"], list)
                        else last["is_terminal"])  # fmt: skip
        out[meta["episode_id"]] = {
            "ended_by": meta["ended_by"], "env_outcome": meta["env_outcome"],
            "terminal": terminal, "truncated": meta["outcome"] == "truncated",
            "length": end - first,
        }  # fmt: skip
    return out


def minari_endings(doc_path: str, export_dir: str, dataset_id: str) -> dict[str, Any]:
    from minari_check import doc_snippet

    code = doc_snippet(Path(doc_path).read_text())
    code = code.replace("<export>", export_dir).replace("<name>-v1", dataset_id)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/export.md (Minari snippet)", "exec"), scope)
    out = {}
    for episode, meta in zip(scope["dataset"].iterate_episodes(), scope["metadata"], strict=True):
        out[meta["episode_id"]] = {
            "ended_by": meta["ended_by"], "env_outcome": meta["env_outcome"],
            "terminal": bool(episode.terminations[-1]),
            "truncated": bool(episode.truncations[-1]),
            "length": len(episode.actions),
        }  # fmt: skip
    return out


def main(kind: str, *args: str) -> None:
    read = {"rlds": rlds_endings, "lerobot": lerobot_endings, "minari": minari_endings}[kind]
    print(json.dumps({"mode": "ending", "episodes": read(*args)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
