"""Who drove each step and which camera its frame came from, as a researcher loads them: run
with a consumer venv's python.

Usage:
    control_check.py rlds <data_dir>
    control_check.py lerobot|minari <docs/export.md> <export_dir> <name>

``rlds`` loads with tensorflow-datasets and rlds (.consumer-venv), ``lerobot`` and ``minari``
run the loading snippet of docs/export.md (.consumer-venv-lerobot, .consumer-venv-minari).
Prints one JSON line: ``{"sources": [[0 the player / 1 the policy per step], ...],
"cameras": [[camera name per step], ...], "actions": [[action per step], ...],
"observations": [sorted observation keys, ...]}`` per episode in dataset order (LeRobot: also
``is_intervention``, and its frame's keys for observations; Minari: per observation, and
``actions`` one fewer: none after the last observation).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def rlds_sources(data_dir: str) -> dict[str, Any]:
    import rlds
    import tensorflow_datasets as tfds

    out, cameras, actions, keys = [], [], [], []
    for episode in tfds.builder_from_directory(data_dir).as_dataset(split="train"):
        steps = episode["steps"]
        length = int(rlds.transformations.episode_length(steps))
        sources = [int(step["control"]["source"]) for step in steps]
        assert len(sources) == length
        out.append(sources)
        cameras.append([step["camera"].numpy().decode() for step in steps])
        actions.append([np.asarray(step["action"]).tolist() for step in steps])
        first = next(iter(steps))["observation"]
        keys.append(sorted(first) if isinstance(first, dict) else [])
    return {"sources": out, "cameras": cameras, "actions": actions, "observations": keys}


def lerobot_sources(doc_path: str, export_dir: str, name: str) -> dict[str, Any]:
    from lerobot_check import doc_snippet

    code = doc_snippet(Path(doc_path).read_text())
    scope: dict[str, Any] = {}
    exec(code.replace("<export>", export_dir).replace("<name>", name), scope)
    dataset = scope["dataset"]
    sources: dict[int, list[int]] = {}
    intervention: dict[int, list[float]] = {}
    cameras: dict[int, list[str]] = {}
    actions: dict[int, list[Any]] = {}
    frame_keys: dict[int, list[str]] = {}
    for i in range(dataset.num_frames):
        item = dataset[i]
        episode = int(item["episode_index"])
        actions.setdefault(episode, []).append(np.asarray(item["action"]).tolist())
        frame_keys.setdefault(episode, sorted(k for k in item if k.startswith("observation.")))
        value = np.asarray(item["complementary_info.control_source"]).reshape(-1)[0]
        sources.setdefault(episode, []).append(int(value))
        flag = np.asarray(item["complementary_info.is_intervention"]).reshape(-1)[0]
        intervention.setdefault(episode, []).append(float(flag))
        cameras.setdefault(episode, []).append(str(item["camera"]))
    keys = sorted(sources)
    return {
        "sources": [sources[k] for k in keys],
        "is_intervention": [intervention[k] for k in keys],
        "cameras": [cameras[k] for k in keys],
        "actions": [actions[k] for k in keys],
        "observations": [frame_keys[k] for k in keys],
    }


def minari_sources(doc_path: str, export_dir: str, name: str) -> dict[str, Any]:
    from minari_check import doc_snippet

    code = doc_snippet(Path(doc_path).read_text())
    scope: dict[str, Any] = {}
    exec(code.replace("<export>", export_dir).replace("<name>-v1", name), scope)
    episodes = list(scope["dataset"].iterate_episodes())
    return {
        "sources": [np.asarray(e.infos["control/source"]).tolist() for e in episodes],
        "cameras": [[str(c) for c in e.infos["camera"]] for e in episodes],
        "actions": [np.asarray(e.actions).tolist() for e in episodes],
        "observations": [
            sorted(e.observations) if isinstance(e.observations, dict) else [] for e in episodes
        ],
    }


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    report = {"rlds": rlds_sources, "lerobot": lerobot_sources, "minari": minari_sources}[mode]
    print(json.dumps(report(*args)))
