"""Export throughput of every format vs TFDS's own envlogger -> RLDS writer, in one run.

Records seeded random-policy episodes (ALE Pong, RGB observations, and CartPole) with the
worker's EpisodeWriter, exports them with ``server.export.export_dataset`` in each format
(tfds = RLDS, oxe = RLDS with the Open X-Embodiment profile, minari, lerobot, and the
episode videos alone) and times TFDS's own RLDS builder (``tensorflow_datasets.rlds.rlds_base``
over the same envlogger logs, which needs TensorFlow) in .consumer-venv as a subprocess.
Prints one JSON object per environment, with steps/s per format.
"""

from __future__ import annotations

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
EPISODES = 4

gym.register_envs(ale_py)

ENVS = {
    "ALE/Pong-v5": lambda: gym.make(
        "ALE/Pong-v5", obs_type="rgb", render_mode="rgb_array", max_episode_steps=250
    ),
    "CartPole-v1": lambda: gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=500),
}


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


def bench(env_id: str, root: Path) -> dict[str, object]:
    """Record, export and compare one environment's episodes."""
    logs = root / "logs"
    recs = [
        record_episode(ENVS[env_id], logs / f"ep-{i}", env_id=env_id, episode_id=f"ep-{i}", seed=i)
        for i in range(EPISODES)
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
    for env_id in ENVS:
        root = Path(tempfile.mkdtemp(prefix="bench-export-"))
        try:
            print(json.dumps(bench(env_id, root)), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
