"""Export throughput of every format vs TFDS's own envlogger -> RLDS writer, in one run.

Records seeded random-policy episodes (ALE Pong, RGB observations, and CartPole) with the
worker's EpisodeWriter, exports them with ``server.export.export_dataset`` in each format
(tfds = RLDS, oxe = RLDS with the Open X-Embodiment profile, minari, lerobot, and the
episode videos alone) and times TFDS's own RLDS builder (``tensorflow_datasets.rlds.rlds_base``
over the same envlogger logs, which needs TensorFlow) in .consumer-venv as a subprocess.
Prints one JSON object per environment, with steps/s per format.

``--smoke`` records one short episode per environment: it checks that the benchmark still runs
(``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/export.py [--episodes 4] [--max-steps N] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ale_py  # noqa: E402
import gymnasium as gym  # noqa: E402

from server.export import (  # noqa: E402
    EpisodeInput,
    ExportFormat,
    ExportOptions,
    export_dataset,
)
from server.export.episode_video import write_episode_videos  # noqa: E402 (imports PyAV now,

# not inside a timed export)
from tests.export._recordings import record_episode  # noqa: E402

CONSUMER_PYTHON = ROOT / ".consumer-venv" / "bin" / "python"
CHECK_SCRIPT = ROOT / "tests" / "export" / "consumer_check.py"

gym.register_envs(ale_py)

MAX_STEPS = {"ALE/Pong-v5": 250, "CartPole-v1": 500}  # each episode's length at most
MAKE_KWARGS: dict[str, dict[str, object]] = {"ALE/Pong-v5": {"obs_type": "rgb"}, "CartPole-v1": {}}


FORMATS = {
    "oxe": ExportOptions(name="bench", profile="oxe"),
    "minari": ExportOptions(name="bench", format=ExportFormat.MINARI),
    "lerobot": ExportOptions(name="bench", format=ExportFormat.LEROBOT),
}


def reference_seconds(data_dir: Path, logs: Path, work: Path) -> float | None:
    """Seconds TFDS's own builder takes on the same logs (None without the consumer venv)."""
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
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])


def bench(env_id: str, root: Path, episodes: int, max_steps: int) -> dict[str, object]:
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
    started = time.perf_counter()
    result = export_dataset(inputs, ExportOptions(name="bench"), root / "out")
    ours = time.perf_counter() - started
    assert result.data_dir is not None
    formats: dict[str, float] = {"tfds": round(steps / ours, 1)}
    for label, options in FORMATS.items():
        t0 = time.perf_counter()
        export_dataset(inputs, options, root / f"out-{label}")
        formats[label] = round(steps / (time.perf_counter() - t0), 1)
    t0 = time.perf_counter()
    write_episode_videos(inputs, ExportOptions(), root / "videos", None)
    formats["episode_videos"] = round(steps / (time.perf_counter() - t0), 1)
    ref = reference_seconds(result.data_dir, logs, root / "ref")
    return {
        "env": env_id,
        "episodes": len(recs),
        "steps": steps,
        "ours_seconds": round(ours, 3),
        "ours_steps_per_s": round(steps / ours, 1),
        "steps_per_s": formats,
        "reference_seconds": None if ref is None else round(ref, 3),
        "reference_steps_per_s": None if ref is None else round(steps / ref, 1),
        "speedup_vs_reference": None if ref is None else round(ref / ours, 2),
        "reference": "tensorflow_datasets.rlds.rlds_base builder (TF 2.15, .consumer-venv)"
        if ref is not None
        else "skipped: run `make consumer-venv`",
    }


def main() -> None:
    """Run every environment's benchmark; one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--max-steps", type=int, help="each episode's length at most")
    parser.add_argument("--smoke", action="store_true", help="one short episode: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.episodes, args.max_steps = 1, 20
    for env_id, max_steps in MAX_STEPS.items():
        root = Path(tempfile.mkdtemp(prefix="bench-export-"))
        try:
            row = bench(env_id, root, args.episodes, args.max_steps or max_steps)
            print(json.dumps({**row, "smoke": args.smoke}), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
