"""Export throughput of every format vs TFDS's own envlogger -> RLDS writer, in one run.

Records seeded random-policy episodes (ALE Pong, RGB observations: 4 episodes, and CartPole:
24 episodes of about 20 steps) with the worker's EpisodeWriter, exports them with
``server.export.export_dataset`` in each format (rlds, oxe = RLDS with the Open X-Embodiment
profile, envlogger, minari, lerobot, and the episode videos alone) and times TFDS's own RLDS
builder (``tensorflow_datasets.rlds.rlds_base`` over the same envlogger logs, which needs
TensorFlow) in .consumer-venv as a subprocess. Prints one JSON object per environment: steps/s
per format (wall clock; ``cpu_steps_per_s``: per CPU second of this process, all its threads),
the bytes each format wrote (``output_bytes``) and ``rlds_vs_reference``, our RLDS export's
speed over the TFDS builder's (and ``rlds_vs_reference_cpu``, the same per CPU second, TF's
threads included).

The machine may be shared: each figure is the best of ``--repeat`` rounds, every format and
the TFDS builder once per round, so that a busy moment hits all of them alike;
``load_average`` says how busy the machine was.

``--smoke`` records one short episode per environment, one round: it checks that the
benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/export.py [--episodes N] [--max-steps N] [--repeat 3] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ale_py  # noqa: E402
import gymnasium as gym  # noqa: E402

from server.export import (  # noqa: E402
    EpisodeInput,
    ExportOptions,
    export_dataset,
)
from server.export.episode_video import write_episode_videos  # noqa: E402 (imports PyAV now,
from server.export.loop import export_threads  # noqa: E402

# not inside a timed export)
from tests.export.recordings import record_episode  # noqa: E402

CONSUMER_PYTHON = ROOT / ".consumer-venv" / "bin" / "python"
CHECK_SCRIPT = ROOT / "tests" / "export" / "consumer_check.py"

gym.register_envs(ale_py)

MAX_STEPS = {"ALE/Pong-v5": 250, "CartPole-v1": 500}  # each episode's length at most
# Random-policy CartPole episodes last about 20 steps: more of them, for ~500 steps.
EPISODES = {"ALE/Pong-v5": 4, "CartPole-v1": 24}
MAKE_KWARGS: dict[str, dict[str, object]] = {"ALE/Pong-v5": {"obs_type": "rgb"}, "CartPole-v1": {}}

FORMATS = {
    "rlds": ExportOptions(name="bench"),
    "oxe": ExportOptions(name="bench", profile="oxe"),
    "envlogger": ExportOptions(name="bench", format="envlogger"),
    "minari": ExportOptions(name="bench", format="minari"),
    "lerobot": ExportOptions(name="bench", format="lerobot"),
}


def reference_seconds(data_dir: Path, logs: Path, work: Path) -> tuple[float, float] | None:
    """Wall and CPU seconds TFDS's own builder takes on the same logs (None without the
    consumer venv)."""
    if not CONSUMER_PYTHON.exists():
        return None
    proc = subprocess.run(
        [str(CONSUMER_PYTHON), str(CHECK_SCRIPT), "reference-time"]
        + [str(data_dir), str(logs), str(work)],
        capture_output=True,
        text=True,
        check=True,
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"},
    )
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(doc["seconds"]), float(doc["cpu_seconds"])


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder``."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def bench(env_id: str, root: Path, episodes: int, max_steps: int, repeat: int) -> dict[str, Any]:
    """Record, export and compare one environment's episodes."""
    logs = root / "logs"

    def make() -> gym.Env:
        return gym.make(env_id, render_mode="rgb_array", max_episode_steps=max_steps,
                        **MAKE_KWARGS[env_id])  # fmt: skip

    recs = [
        record_episode(make, logs / f"ep-{i}", env_id=env_id, episode_id=f"ep-{i}", seed=i)
        for i in range(episodes)
    ]
    steps = sum(r.num_steps for r in recs)
    inputs = [EpisodeInput(r.log_dir, r.episode_id, "bench-agent") for r in recs]
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    # Rounds: each format once per round, the TFDS builder between ours, so that a busy
    # moment of the shared machine falls on all of them alike.
    for round_ in range(repeat):
        for label, options in FORMATS.items():
            c0, t0 = time.process_time(), time.perf_counter()
            export_dataset(inputs, options, root / f"out-{label}-{round_}")
            took, used = time.perf_counter() - t0, time.process_time() - c0
            seconds[label] = min(seconds.get(label, math.inf), took)
            cpu[label] = min(cpu.get(label, math.inf), used)
        c0, t0 = time.process_time(), time.perf_counter()
        write_episode_videos(inputs, ExportOptions(), root / f"videos-{round_}", None)
        took, used = time.perf_counter() - t0, time.process_time() - c0
        seconds["episode_videos"] = min(seconds.get("episode_videos", math.inf), took)
        cpu["episode_videos"] = min(cpu.get("episode_videos", math.inf), used)
        data_dir = root / f"out-rlds-{round_}" / "bench" / "1.0.0"
        ref = reference_seconds(data_dir, logs, root / f"ref-{round_}")
        if ref is not None:
            seconds["reference"] = min(seconds.get("reference", math.inf), ref[0])
            cpu["reference"] = min(cpu.get("reference", math.inf), ref[1])
    ref_s, ref_cpu = seconds.pop("reference", None), cpu.pop("reference", None)
    outputs = {**{k: root / f"out-{k}-0" for k in FORMATS}, "episode_videos": root / "videos-0"}
    return {
        "env": env_id,
        "episodes": len(recs),
        "steps": steps,
        "repeat": repeat,
        "steps_per_s": {k: round(steps / v, 1) for k, v in seconds.items()},
        # this process's CPU (all its threads): what an export costs whatever the load
        "cpu_steps_per_s": {k: round(steps / v, 1) if v > 0 else None for k, v in cpu.items()},
        # what each format wrote (every file of the first round's output)
        "output_bytes": {k: folder_bytes(p) for k, p in outputs.items()},
        "reference_steps_per_s": None if ref_s is None else round(steps / ref_s, 1),
        "rlds_vs_reference": None if ref_s is None else round(ref_s / seconds["rlds"], 2),
        # per CPU second (all threads of each process): what the load changes least
        "rlds_vs_reference_cpu": None
        if ref_cpu is None or cpu["rlds"] <= 0
        else round(ref_cpu / cpu["rlds"], 2),
        "reference": "tensorflow_datasets.rlds.rlds_base builder (TF 2.15, .consumer-venv)"
        if ref_s is not None
        else "skipped: run `make consumer-venv`",
        "export_threads": export_threads(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    """Run every environment's benchmark; one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, help="per environment (4 Pong, 24 CartPole)")
    parser.add_argument("--max-steps", type=int, help="each episode's length at most")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is the best")
    parser.add_argument("--smoke", action="store_true", help="one short episode: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.episodes, args.max_steps, args.repeat = 1, 20, 1
    for env_id, max_steps in MAX_STEPS.items():
        root = Path(tempfile.mkdtemp(prefix="bench-export-"))
        try:
            episodes = args.episodes or EPISODES[env_id]
            row = bench(env_id, root, episodes, args.max_steps or max_steps, args.repeat)
            print(json.dumps({**row, "smoke": args.smoke}), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
