"""Export throughput on Apache Beam (DirectRunner) with 1, 2 and 4 workers against the
single-process exporter, in the same run on the same recorded episodes.

Records seeded random-policy ALE Pong episodes (RGB observations, JPEG frames) with the
worker's EpisodeWriter, exports them once in one process and then as a Beam pipeline in each
running mode and worker count, checks every Beam output is byte-identical to the
single-process one, and prints one JSON object per run and a summary line.

    python benchmarks/export_beam.py [episodes] [steps_per_episode] [--smoke]

``fixed_seconds`` is a one-episode Beam export: the pipeline's own start-up and tear-down
(worker processes, gRPC, shuffles), which a large export pays once. ``cpu_seconds`` counts
this process and its finished children (worker processes). The machine may be shared:
``load_average_1m`` says how busy it was; compare rows of one run only.

``--smoke`` exports 2 episodes of 10 steps, with 2 workers in each running mode: it checks that
the benchmark still runs (``make test``), its figures mean nothing.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(  # Beam's worker processes import server.*
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

import ale_py  # noqa: E402
import gymnasium as gym  # noqa: E402

from server.export import EpisodeInput, ExportOptions, ExportResult, export_dataset  # noqa: E402
from server.export.beam_config import BeamConfig  # noqa: E402
from tests.export._recordings import record_episode  # noqa: E402

gym.register_envs(ale_py)
ENV_ID = "ALE/Pong-v5"
RUNS = [
    ("multi_processing", 1),
    ("multi_processing", 2),
    ("multi_processing", 4),
    ("multi_threading", 2),
    ("multi_threading", 4),
]
SMOKE_RUNS = [("multi_processing", 2), ("multi_threading", 2)]


def same_files(a: Path, b: Path) -> bool:
    """Whether the two export folders hold the same files with the same bytes."""
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if names != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(
    inputs: list[EpisodeInput], options: ExportOptions, out: Path
) -> tuple[float, float, ExportResult]:
    """Wall seconds and CPU seconds (this process and its finished children) of an export."""
    cpu, started = _cpu(), time.perf_counter()
    result = export_dataset(inputs, options, out)
    return time.perf_counter() - started, _cpu() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("episodes", type=int, nargs="?", default=24)
    parser.add_argument("steps_per_episode", type=int, nargs="?", default=250)
    parser.add_argument("--smoke", action="store_true", help="2 short episodes: does it run?")
    args = parser.parse_args()
    episodes, length = (2, 10) if args.smoke else (args.episodes, args.steps_per_episode)
    runs = SMOKE_RUNS if args.smoke else RUNS
    root = Path(tempfile.mkdtemp(prefix="bench-export-beam-"))
    try:

        def make() -> gym.Env:
            return gym.make(
                ENV_ID, obs_type="rgb", render_mode="rgb_array", max_episode_steps=length
            )

        recs = [
            record_episode(
                make, root / "logs" / f"ep-{i}", env_id=ENV_ID, episode_id=f"ep-{i}", seed=i
            )
            for i in range(episodes)
        ]
        inputs = [EpisodeInput(r.log_dir, r.episode_id, "bench-agent") for r in recs]
        steps = sum(r.num_steps for r in recs)
        options = ExportOptions(name="bench", max_episodes_per_shard=4)
        base = {"env": ENV_ID, "episodes": episodes, "steps": steps, "cpus": os.cpu_count(),
                "smoke": args.smoke}  # fmt: skip
        single_s, single_cpu, _ = timed(inputs, options, root / "single")
        rows: list[dict[str, object]] = [
            {
                **base,
                "engine": "single",
                "seconds": round(single_s, 3),
                "steps_per_s": round(steps / single_s, 1),
                "cpu_seconds": round(single_cpu, 2),
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
        ]
        print(json.dumps(rows[0]), flush=True)
        for mode, workers in runs:
            beam = replace(options, beam=BeamConfig(workers=workers, running_mode=mode))
            out = root / f"{mode}-{workers}"
            fixed_s, _, _ = timed(inputs[:1], beam, root / f"fixed-{mode}-{workers}")
            seconds, cpu, _ = timed(inputs, beam, out)
            row = {
                **base,
                "engine": "beam",
                "running_mode": mode,
                "workers": workers,
                "seconds": round(seconds, 3),
                "steps_per_s": round(steps / seconds, 1),
                "speedup_vs_single": round(single_s / seconds, 2),
                "fixed_seconds": round(fixed_s, 3),
                "cpu_seconds": round(cpu, 2),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "identical_to_single": same_files(root / "single", out),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        best = max(rows[1:], key=lambda r: float(r["steps_per_s"]))  # type: ignore[arg-type]
        print(
            json.dumps(
                {
                    "summary": True,
                    "smoke": args.smoke,
                    "single_steps_per_s": rows[0]["steps_per_s"],
                    "best_beam": {k: best[k] for k in ("running_mode", "workers", "steps_per_s")},
                    "all_identical": all(r.get("identical_to_single") for r in rows[1:]),
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                }
            ),
            flush=True,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
