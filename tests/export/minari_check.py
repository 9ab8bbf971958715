"""Minari export checked by minari itself, run with .consumer-venv-minari/bin/python.

Usage:
    minari_check.py <docs/export.md> <export_dir> <dataset_id> <expected.npz>

Runs the Minari loading snippet of docs/export.md (placeholders replaced) and compares every
loaded value with the expected RLDS episodes; prints one JSON line, exits non-zero on the
first mismatch.
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

EPISODE_FIELDS = ("agent_id", "status", "notes", "study_id", "env_id", "env_config", "outcome",
                  "player_outcome", "reviewer_outcome", "replay_verdict",
                  "replay_message", "task_id", "language_instruction", "ended_by",
                  "env_outcome")  # fmt: skip


def doc_snippet(doc: str) -> str:
    """The first python block of the doc's "Minari format" section."""
    section = doc.split("## Minari format", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        fail("no python snippet in the Minari section of docs/export.md")
    assert match is not None
    return match.group(1)


def steps_of(want: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Expected per-step arrays under ``prefix`` (a dict when the field is a Dict)."""
    if prefix in want:
        return want[prefix]
    plen = len(prefix) + 1
    return {k[plen:]: v for k, v in want.items() if k.startswith(prefix + "/")}


def compare_nested(name: str, got: Any, want: Any) -> None:
    """Values of a (possibly Dict) space, key by key."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            fail(
                f"{name}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(want)}"
            )
        for key in want:
            compare_nested(f"{name}/{key}", got[key], want[key])
        return
    got_dtype, want_dtype = np.asarray(got).dtype, np.asarray(want).dtype
    if want_dtype.kind != "U" and got_dtype != want_dtype:
        fail(f"{name}: dtype {got_dtype} != {want_dtype}")
    compare(name, got, want)


def main(doc_path: str, export_dir: str, dataset_id: str, expected_path: str) -> None:
    code = doc_snippet(Path(doc_path).read_text())
    code = code.replace("<export>", export_dir).replace("<name>-v1", dataset_id)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/export.md (Minari snippet)", "exec"), scope)
    dataset, metadata = scope["dataset"], scope["metadata"]
    expected = load_expected(expected_path)
    if dataset.total_episodes != len(expected):
        fail(f"{dataset.total_episodes} episodes != {len(expected)}")
    want_steps = sum(int(e["_length"]) - 1 for e in expected)
    if dataset.total_steps != want_steps:
        fail(f"total_steps {dataset.total_steps} != {want_steps}")
    checked = 0
    for episode, meta, want in zip(dataset.iterate_episodes(), metadata, expected, strict=True):
        eid = str(want["episode_id"])
        if meta["episode_id"] != eid:
            fail(f"episode {episode.id}: episode_id {meta['episode_id']} != {eid}")
        for key in EPISODE_FIELDS:
            compare(f"{eid} {key}", meta[key], str(want[key]))
        compare(f"{eid} tags", np.asarray(meta["tags"], dtype=str), want["tags"])
        if meta.get("seed", -1) != int(want["seed"]):
            fail(f"{eid}: seed {meta.get('seed')} != {want['seed']}")
        check_judgements(eid, meta, want)
        if meta["replay_step"] != int(want["replay_step"]):
            fail(f"{eid}: replay_step {meta['replay_step']} != {want['replay_step']}")
        n = int(want["_length"])
        if meta["total_steps"] != n - 1 or len(episode) != n - 1:
            fail(f"{eid}: {len(episode)} transitions != {n - 1}")
        observations = steps_of(want, "steps/observation")
        compare_nested(f"{eid} observations", episode.observations, observations)
        actions = steps_of(want, "steps/action")
        actions = (
            {k: v[:-1] for k, v in actions.items()} if isinstance(actions, dict) else actions[:-1]
        )
        compare_nested(f"{eid} actions", episode.actions, actions)
        compare_nested(f"{eid} rewards", episode.rewards, want["steps/reward"][:-1])
        terminal = bool(want["steps/is_terminal"][-1])
        last = np.arange(n - 1) == n - 2
        compare(f"{eid} terminations", episode.terminations, last & terminal)
        compare(f"{eid} truncations", episode.truncations, last & (not terminal))
        for obs in range(n):
            value = (
                {k: v[obs] for k, v in episode.observations.items()}
                if isinstance(episode.observations, dict)
                else episode.observations[obs]
            )
            if not dataset.observation_space.contains(value):
                fail(f"{eid}: observation {obs} is not in {dataset.observation_space}")
        infos = {k[len("steps/") :]: v for k, v in want.items() if k.startswith("steps/")}
        infos = {
            k: v
            for k, v in infos.items()
            if k in ("info", "input", "camera", "narration")
            or k.startswith(("timing/", "tag:", "control/"))
        }
        # the episode's instruction on every observation
        infos["language_instruction"] = np.asarray([str(want["language_instruction"])] * n)
        if set(episode.infos) != set(infos):
            fail(f"{eid}: infos {sorted(episode.infos)} != {sorted(infos)}")
        for key, value in infos.items():
            compare_nested(f"{eid} infos/{key}", episode.infos[key], value)
        checked += n
    print(json.dumps({"mode": "minari", "episodes": len(expected), "steps": checked}))


if __name__ == "__main__":
    main(*sys.argv[1:])
