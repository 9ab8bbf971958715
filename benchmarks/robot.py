"""Robot manipulation: what a teleoperated step costs, and how many teleoperators fit here.

For the catalog's ``FetchPickAndPlace`` (gymnasium-robotics, 4-D action, one 256 px frame)
and our ``PickCube`` (server/envs/pick_cube.py, 7-D action, a 256 px frame plus the front
and wrist images of its observation at ``image_size`` px, 128 by default; 0 = none), in
this process:

- ``step_ms``: ``env.step`` alone (PickCube's includes drawing its observation images);
- ``step_render_ms``: ``env.step`` + the streamed frame (what a worker does before encoding);

and through a real worker (``EnvWorker.send_input`` in sync mode, back to back: map the
input, step, render, encode, reply; the step is recorded after the reply):
``worker_round_trip_ms`` and ``in_worker_ms`` (the worker's own time per step).

``teleoperators``: at the entry's control rate (25 steps/s for both), one teleoperator keeps
``in_worker_ms × rate / 1000`` of a core busy; ``fit_on_cores`` is how many such workers
this machine's cores hold (``os.cpu_count()``), before the app's own work and with nothing
else running — the load average printed beside says how busy the machine was. Prints JSON
(milliseconds: median, p90). ``--smoke`` runs a few steps (``make test``): its figures mean
nothing.

    .venv/bin/python benchmarks/robot.py [--steps 500] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from server.runtime import EnvWorker  # noqa: E402
from server.runtime.adapters import build_adapter  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.runtime.catalog import CATALOG  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of()
WARMUP = 20


def cases(smoke: bool) -> dict[str, tuple[Any, Any]]:
    """name → (catalog entry, source) for the installed robot entries (``smoke``: one
    PickCube case)."""
    out: dict[str, tuple[Any, Any]] = {}
    fetch = CATALOG["FetchPickAndPlace"]
    if fetch.installed():
        out["fetch_pick_and_place"] = (fetch, fetch.source())
    cube = CATALOG["PickCube"]
    if cube.installed():
        out["pick_cube"] = (cube, cube.source())
        if not smoke:
            no_images = cube.source().model_copy(update={"kwargs": {"image_size": 0}})
            out["pick_cube_no_obs_images"] = (cube, no_images)
    return out


def stats(samples: list[float]) -> dict[str, float]:
    """Median and p90 in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {"median": round(statistics.median(ms), 3), "p90": round(ms[int(len(ms) * 0.9)], 3)}


def _action(space: Any, i: int) -> np.ndarray:
    """A slow back-and-forth on every dimension (the hand moves, the gripper opens/shuts)."""
    phase = math.sin(i / 10.0)
    return np.full(space.shape, 0.3 * phase, dtype=space.dtype)


def in_process(source: Any, steps: int) -> dict[str, Any]:
    """``env.step`` alone, and ``env.step`` + the streamed frame, in this process."""
    adapter = build_adapter(source, ALLOWED)
    env = adapter.env
    try:
        env.reset(seed=0)
        step, step_render = [], []
        for i in range(steps + WARMUP):
            action = _action(env.action_space, i)
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(action)
            t1 = time.perf_counter()
            adapter.frame()
            t2 = time.perf_counter()
            if i >= WARMUP:
                step.append(t1 - t0)
                step_render.append(t2 - t0)
            if terminated or truncated:
                env.reset()
        return {"step_ms": stats(step), "step_render_ms": stats(step_render)}
    finally:
        adapter.close()


async def through_worker(spec: EnvironmentSpec, steps: int, data_root: str) -> dict[str, Any]:
    """Sync-mode ``send_input`` round trips, back to back, with the worker's own time."""
    worker = await EnvWorker.start(spec, allowed=ALLOWED, study_id="bench", data_root=data_root)
    try:
        await worker.begin_episode("bench", 0)
        trips, work = [], []
        for i in range(steps + WARMUP):
            keys = ["ArrowRight"] if (i // 10) % 2 else ["ArrowLeft"]
            t0 = time.perf_counter()
            event = await worker.send_input({"keys": keys}, {"input_sent": time.time() * 1000})
            assert event is not None
            if i >= WARMUP:
                trips.append(time.perf_counter() - t0)
                work.append(event.work_ms / 1000)
            if event.done:
                await worker.begin_episode(f"bench{i}", 0)
        await worker.end_episode("benchmark")
        return {"worker_round_trip_ms": stats(trips), "in_worker_ms": stats(work)}
    finally:
        await worker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="a few steps: does it still run?")
    args = parser.parse_args()
    steps = 10 if args.smoke else args.steps
    cores = os.cpu_count() or 1
    report: dict[str, Any] = {
        "steps": steps, "smoke": args.smoke, "cores": cores,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip
    for name, (entry, source) in cases(args.smoke).items():
        local = in_process(source, steps)
        spec = EnvironmentSpec(id="bench", name=name, source=source, mode="sync", fps=entry.fps)
        with tempfile.TemporaryDirectory() as tmp:
            worker = asyncio.run(through_worker(spec, steps, tmp))
        busy = worker["in_worker_ms"]["median"] * entry.fps / 1000  # cores per teleoperator
        report[name] = {
            "id": source.id, "kwargs": source.kwargs, "control_hz": entry.fps, **local, **worker,
            "teleoperators": {
                "cores_each": round(busy, 3),
                "fit_on_cores": math.floor(cores / busy) if busy > 0 else None,
            },
        }  # fmt: skip
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
