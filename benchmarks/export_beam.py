"""Export throughput on Apache Beam (DirectRunner) with 1, 2 and 4 workers against the
single-process exporter, in the same run on the same recorded episodes.

Records seeded random-policy ALE Pong episodes (RGB observations, JPEG frames) with the
worker's EpisodeWriter, exports them once in one process and then as a Beam pipeline in each
running mode and worker count, checks every Beam output is byte-identical to the
single-process one, and prints one JSON object per run and a summary line.

    python benchmarks/export_beam.py [episodes] [steps_per_episode] [--smoke]

``fixed_seconds`` is a one-episode export: for Beam, mostly the pipeline's own start-up and
tear-down (worker processes, gRPC, shuffles), which a large export pays once. From it and the
whole export each run models its time as fixed seconds plus seconds per step and prints
``overtakes_single_at_steps``, the export size from which that Beam run is faster than one
process (None: never, its per-step cost is not lower); the summary's
``beam_worth_it_from_steps`` is the smallest of them and ``beam_verdict`` says it in words
(or that no Beam run overtakes one process at any size). ``cpu_seconds`` counts
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
from tests.export.recordings import record_episode  # noqa: E402

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


def overtakes_at(
    first_steps: int,
    steps: int,
    single: tuple[float, float],
    beam: tuple[float, float],
) -> int | None:
    """The export size (steps) from which Beam is faster than one process, each modelled as
    fixed seconds plus seconds per step from its one-episode (``first_steps``) and whole
    (``steps``) exports, given as (one-episode seconds, whole seconds); None when Beam's
    per-step cost is not lower (it never overtakes)."""
    if steps <= first_steps:
        return None
    per_single = (single[1] - single[0]) / (steps - first_steps)
    per_beam = (beam[1] - beam[0]) / (steps - first_steps)
    if per_beam >= per_single:
        return None
    return max(first_steps, round(first_steps + (beam[0] - single[0]) / (per_single - per_beam)))


def verdict(first: dict[str, object] | None, cpus: int | None) -> str:
    """Where Beam overtakes one process, in words (``first``: the Beam run that does so at
    the smallest export; None when none does)."""
    if first is None:
        return (
            f"no Beam run overtakes one process at any size on this machine ({cpus} cores):"
            " none costs less per step than one process, which reads and encodes in threads"
        )
    return (
        f"Beam ({first['running_mode']}, {first['workers']} workers) overtakes one process"
        f" from {first['overtakes_single_at_steps']:,} steps on ({cpus} cores)"
    )


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
        first_steps = recs[0].num_steps
        single_fixed, _, _ = timed(inputs[:1], options, root / "single-fixed")
        single_s, single_cpu, _ = timed(inputs, options, root / "single")
        rows: list[dict[str, object]] = [
            {
                **base,
                "engine": "single",
                "seconds": round(single_s, 3),
                "steps_per_s": round(steps / single_s, 1),
                "fixed_seconds": round(single_fixed, 3),
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
                # from this many steps on Beam is the faster (linear model; None: never)
                "overtakes_single_at_steps": overtakes_at(
                    first_steps, steps, (single_fixed, single_s), (fixed_s, seconds)
                ),
                "cpu_seconds": round(cpu, 2),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "identical_to_single": same_files(root / "single", out),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        best = max(rows[1:], key=lambda r: float(r["steps_per_s"]))  # type: ignore[arg-type]
        at = {i: r.get("overtakes_single_at_steps") for i, r in enumerate(rows)}
        crossing = sorted((n, i) for i, n in at.items() if isinstance(n, int))
        first = rows[crossing[0][1]] if crossing else None  # overtakes at the fewest steps
        print(
            json.dumps(
                {
                    "summary": True,
                    "smoke": args.smoke,
                    "single_steps_per_s": rows[0]["steps_per_s"],
                    "best_beam": {k: best[k] for k in ("running_mode", "workers", "steps_per_s")},
                    # the smallest export (steps) from which some Beam run beats one process
                    "beam_worth_it_from_steps": None
                    if first is None
                    else first["overtakes_single_at_steps"],
                    "beam_verdict": verdict(first, cpus=os.cpu_count()),
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
