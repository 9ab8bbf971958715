"""Robot manipulation: what a teleoperated step costs, and how many teleoperators fit here.

For the catalog's ``FetchPickAndPlace`` (gymnasium-robotics, 4-D action, one 256 px frame),
our ``PickCube`` (server/envs/pick_cube.py, 7-D action, a 256 px frame plus the front and
wrist images of its observation at ``image_size`` px, 128 by default; 0 = none) and
robosuite's ``PickPlaceCan`` and ``Lift`` (server/envs/robosuite_tasks.py, 7-D OSC_POSE
action, two 128 px camera images in the observation, a 256 px frame drawn besides), in
the process that builds the environment (this one; for robosuite, a child process in the
``robosuite`` runtime's interpreter, which runs this script with ``--in-process``):

- ``step_ms``: ``env.step`` alone (PickCube's and robosuite's include drawing their
  observation images);
- ``step_render_ms``: ``env.step`` + the streamed frame (what a worker does before encoding);

- ``physics_and_shown_cpu_ms``: the floor of a live step, its CPU (every thread's) with the
  observation's images left out where the environment can (``defer_images``, as the play
  path does: PickCube and robosuite) and the one shown frame drawn;

and through a real worker (``EnvWorker.send_input`` in sync mode, back to back: map the
input, step, render, encode, reply; the step is recorded after the reply):
``worker_round_trip_ms``, ``in_worker_ms`` (the worker's own time per step) and
``live_step_cpu_ms`` (the worker process's CPU per step). ``live_step`` sets the live step's
CPU against the floor, measured in the same run: ``times_physics_and_shown`` (goal ≤ 1.25).

``teleoperators``: at the entry's control rate (its catalog ``fps``: 25 steps/s for Fetch
and PickCube, 20 for robosuite), one teleoperator keeps ``live_step_cpu_ms × rate / 1000``
of a core busy; ``fit_on_cores`` is how many such workers this machine's cores hold
(``os.cpu_count()``). From that guess (halved until they fit, then one more at a time), runs
of ``--window`` seconds with that many teleoperators playing at once (async mode, a worker
each, as benchmarks/replay_check.py's players) find ``under_1pct_late``: the most of them
whose frames are under 1 % late (a step more than 1.5 periods after the one before). The
load average printed beside each run says how busy the machine was.

``worker_start_s``: per runtime (``app``: the forkserver, already running; ``robotics``,
``robosuite``, ``dm_control``, ``nethack``: a new interpreter), the seconds from
``EnvWorker.start`` to its ready reply (environment built) for one catalog entry, median of
``--starts`` starts (the runtime's check is done once before, as the app does at its start).

``ready_gate_s``: per runtime, the seconds from a session's start to its ready gate's first
frame (the worker, then ``begin_episode``): ``cold_median`` with a worker started for it,
``warm_median`` with one the app's warm pool had ready (``server/runtime/warm_pool.py``; the
goal is 1.5 s for every suite).

Prints JSON (milliseconds: median, p90). Every runtime must be installed (``make
runtimes``): a missing one is an error. ``--smoke`` runs a few steps and one start each
(``make test``): its figures mean nothing.

    .venv/bin/python benchmarks/robot.py [--steps 500] [--starts 3] [--window 10] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from server.runtime import EnvWorker, runtimes  # noqa: E402
from server.runtime.adapters import build_adapter  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.runtime.catalog import CATALOG  # noqa: E402
from server.runtime.warm_pool import WarmPool  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of()
WARMUP = 20  # steps not counted (2 with --smoke)
LATE_PCT = 1.0  # teleoperators fit while fewer of their frames than this are late
MAX_RUNS = 5  # runs of the teleoperator search per entry
CHILD_TIMEOUT_S = 600.0
# runtime → the catalog entry whose worker start is timed (app: the first one installed)
START_ENTRIES = {
    runtimes.APP: ("LunarLander",),
    "robotics": ("PickCube", "FetchPickAndPlace"),
    "robosuite": ("Robosuite-Lift",),
    "dm_control": ("dm_control-cartpole-swingup",),
    "nethack": ("MiniHack-Room",),
}


def require_runtimes() -> None:
    """Exit, naming ``make runtimes``, unless every runtime is installed and fits."""
    bad = [runtimes.state(name) for name in runtimes.RUNTIMES]
    bad = [found for found in bad if not found.ok]
    if bad:
        lines = [f"  {found.runtime}: {found.state}: {found.message}" for found in bad]
        sys.exit("benchmarks/robot.py needs every environment runtime; run `make runtimes`"
                 " (or the commands below):\n" + "\n".join(lines))  # fmt: skip


def cases(smoke: bool) -> dict[str, tuple[Any, Any]]:
    """name → (catalog entry, source) for the robot entries: Fetch and PickCube when
    installed (their runtime is required anyway), robosuite's always (``smoke``: no
    ``image_size: 0`` PickCube case)."""
    out: dict[str, tuple[Any, Any]] = {}
    fetch = CATALOG["FetchPickAndPlace"]
    if fetch.installed():
        out["fetch_pick_and_place"] = (fetch, fetch.source())
    cube = CATALOG["PickCube"]
    if cube.installed():
        out["pick_cube"] = (cube, cube.source())
    for name, key in (("robosuite_pick_place_can", "Robosuite-PickPlaceCan"),
                      ("robosuite_lift", "Robosuite-Lift")):  # fmt: skip
        entry = CATALOG[key]
        out[name] = (entry, entry.source())
    return out


def stats(samples: list[float]) -> dict[str, float]:
    """Median and p90 in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {"median": round(statistics.median(ms), 3), "p90": round(ms[int(len(ms) * 0.9)], 3)}


def _action(space: Any, i: int) -> np.ndarray:
    """A slow back-and-forth on every dimension (the hand moves, the gripper opens/shuts)."""
    phase = math.sin(i / 10.0)
    return np.full(space.shape, 0.3 * phase, dtype=space.dtype)


def in_process(source: Any, steps: int, warmup: int = WARMUP) -> dict[str, Any]:
    """``env.step`` alone, and ``env.step`` + the streamed frame, in this process (every
    observation image drawn: the old play path); then the floor of a live step, its CPU
    (``time.process_time``: every thread, Mesa draws on several) with the observation's
    images left out where the environment can (``defer_images``: the play path's) and the
    shown frame drawn: physics plus one shown render."""
    adapter = build_adapter(source, ALLOWED)
    env = adapter.env
    try:
        env.reset(seed=0)
        step, step_render = [], []
        for i in range(steps + warmup):
            action = _action(env.action_space, i)
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(action)
            t1 = time.perf_counter()
            adapter.frame()
            t2 = time.perf_counter()
            if i >= warmup:
                step.append(t1 - t0)
                step_render.append(t2 - t0)
            if terminated or truncated:
                env.reset()
        deferred = adapter.defer_images(True)
        env.reset(seed=0)
        floor = []
        for i in range(steps + warmup):
            action = _action(env.action_space, i)
            c0 = time.process_time()
            _, _, terminated, truncated, _ = env.step(action)
            adapter.frame()
            if i >= warmup:
                floor.append(time.process_time() - c0)
            if terminated or truncated:
                env.reset()
        shown = {**stats(floor), "mean": round(1000 * statistics.fmean(floor), 3)}
        return {"step_ms": stats(step), "step_render_ms": stats(step_render),
                "deferred_keys": list(deferred), "physics_and_shown_cpu_ms": shown}  # fmt: skip
    finally:
        adapter.close()


def in_runtime(
    runtime: str, spec: EnvironmentSpec, steps: int, warmup: int = WARMUP
) -> dict[str, Any]:
    """:func:`in_process` in ``runtime``'s interpreter: this script with ``--in-process``,
    started as the runtime's workers are (its flags and environment)."""
    python = runtimes.RUNTIMES[runtime].python
    command = [str(python), *runtimes.PYTHON_FLAGS, str(Path(__file__).resolve()),
               "--in-process", spec.model_dump_json(), "--steps", str(steps),
               "--warmup", str(warmup)]  # fmt: skip
    done = subprocess.run(command, env=runtimes.worker_env(), cwd=tempfile.gettempdir(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S)  # fmt: skip
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.exit(f"measuring {spec.name} in the {runtime} runtime failed (exit "
                 f"{done.returncode}):\n{done.stderr[-3000:]}")  # fmt: skip
    return json.loads(lines[-1])


async def through_worker(
    spec: EnvironmentSpec, steps: int, data_root: str, warmup: int = WARMUP
) -> dict[str, Any]:
    """Sync-mode ``send_input`` round trips, back to back, with the worker's own time and
    its process's CPU per step."""
    from replay_check import cpu_seconds  # the app's side only

    worker = await EnvWorker.start(spec, allowed=ALLOWED, study_id="bench", data_root=data_root)
    try:
        await worker.begin_episode("bench", 0)
        trips, work = [], []
        cpu0 = 0.0
        for i in range(steps + warmup):
            if i == warmup:
                cpu0 = cpu_seconds(worker.pid or 0)
            keys = ["ArrowRight"] if (i // 10) % 2 else ["ArrowLeft"]
            t0 = time.perf_counter()
            event = await worker.send_input({"keys": keys}, {"input_sent": time.time() * 1000})
            assert event is not None
            if i >= warmup:
                trips.append(time.perf_counter() - t0)
                work.append(event.work_ms / 1000)
            if event.done:
                await worker.begin_episode(f"bench{i}", 0)
        cpu = cpu_seconds(worker.pid or 0) - cpu0
        await worker.end_episode("benchmark")
        return {"worker_round_trip_ms": stats(trips), "in_worker_ms": stats(work),
                "live_step_cpu_ms": round(1000 * cpu / max(1, steps), 3)}  # fmt: skip
    finally:
        await worker.close()


async def players_at_rate(
    spec: EnvironmentSpec, k: int, seconds: float, data_root: str
) -> dict[str, Any]:
    """``k`` teleoperators at once in async mode at the entry's control rate (a worker each,
    their input changing twice a second, as benchmarks/replay_check.py's players): their
    late frames over ``seconds`` once all play."""
    from replay_check import AsyncPlayer, window_figures  # the app's side only

    players = [AsyncPlayer(i, spec, data_root) for i in range(k)]
    tasks = [asyncio.create_task(p.run()) for p in players]
    try:
        await asyncio.gather(*(p.playing.wait() for p in players))
        for p in players:
            if p.error is not None:
                raise p.error
        await asyncio.sleep(2.0 if seconds > 2 else 0.5)  # the workers' start-up is over
        t0 = time.time()
        await asyncio.sleep(seconds)
        figures = window_figures(players, [(t0, time.time())], spec.fps)
    finally:
        for p in players:
            p.stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 120)
    figures["players"] = k
    figures["load_average"] = round(os.getloadavg()[0], 2)
    return figures


def teleoperators(spec: EnvironmentSpec, guess: int, seconds: float, cap: int) -> dict[str, Any]:
    """The most teleoperators under :data:`LATE_PCT` % late frames, found from ``guess``
    (the CPU estimate): halved until they fit, then one more at a time until they do not;
    a run of ``seconds`` each, at most ``cap`` teleoperators and :data:`MAX_RUNS` runs."""
    runs: dict[int, dict[str, Any]] = {}

    def ok(k: int) -> bool:
        if k not in runs:
            with tempfile.TemporaryDirectory() as tmp:
                runs[k] = asyncio.run(players_at_rate(spec, k, seconds, tmp))
        return runs[k]["late_frames_pct"] < LATE_PCT

    k = max(1, min(cap, guess))
    while not ok(k) and k > 1 and len(runs) < MAX_RUNS:
        k = max(1, k // 2)  # halve until they fit
    best = k if ok(k) else None
    while best is not None and best < cap and len(runs) < MAX_RUNS and ok(best + 1):
        best += 1
    return {"under_1pct_late": best, "runs": [runs[n] for n in sorted(runs)]}


async def worker_starts(starts: int, data_root: str) -> dict[str, Any]:
    """Per runtime: seconds from ``EnvWorker.start`` to ready, for one entry (median)."""
    out: dict[str, Any] = {}
    for runtime, keys in START_ENTRIES.items():
        entry = next((CATALOG[k] for k in keys if CATALOG[k].installed()), None)
        if entry is None:
            sys.exit(f"none of {keys} is installed (needed for the {runtime} worker start)")
        spec = EnvironmentSpec(id="bench", name=entry.key, source=entry.source(),
                               mode="sync", fps=entry.fps)  # fmt: skip
        samples = []
        for _ in range(starts):
            t0 = time.perf_counter()
            worker = await EnvWorker.start(spec, allowed=ALLOWED, study_id="bench",
                                           data_root=data_root)  # fmt: skip
            samples.append(time.perf_counter() - t0)
            await worker.close()
        out[runtime] = {"entry": entry.key, "median": round(statistics.median(samples), 3),
                        "samples": [round(x, 3) for x in samples]}  # fmt: skip
    return out


async def ready_gates(starts: int, data_root: str) -> dict[str, Any]:
    """Per runtime: seconds from a session's start to its ready gate's first frame (the
    worker, then ``begin_episode``), ``cold`` (a worker started for it) and ``warm`` (one
    taken from a :class:`WarmPool` that had it ready: the app's default), medians."""
    out: dict[str, Any] = {}
    for runtime, keys in START_ENTRIES.items():
        entry = next(CATALOG[k] for k in keys if CATALOG[k].installed())
        spec = EnvironmentSpec(id="bench", name=entry.key, source=entry.source(), mode="sync")
        args = {"allowed": ALLOWED, "study_id": "bench", "data_root": data_root}
        cold, warm = [], []
        for i in range(starts):
            t0 = time.perf_counter()
            worker = await EnvWorker.start(spec, **args)
            await worker.begin_episode(f"cold{i}", 0)
            cold.append(time.perf_counter() - t0)
            await worker.close()
        pool = WarmPool(per_env=1, max_total=1, max_age_s=3600, idle_s=3600, ping_timeout_s=5)
        try:
            for i in range(starts):
                key = pool.want(spec, **args)
                while not pool.ready(key):
                    await asyncio.sleep(0.01)
                t0 = time.perf_counter()
                taken = await pool.take(spec, **args)
                assert taken is not None
                await taken.begin_episode(f"warm{i}", 0)
                warm.append(time.perf_counter() - t0)
                await taken.close()
        finally:
            await pool.close()
        medians = {"cold_median": statistics.median(cold), "warm_median": statistics.median(warm)}
        out[runtime] = {"entry": entry.key, **{k: round(v, 3) for k, v in medians.items()}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--starts", type=int, default=3, help="worker starts per runtime")
    parser.add_argument("--window", type=float, default=10.0,
                        help="seconds of each teleoperators' run")  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="a few steps: does it still run?")
    # in a runtime's interpreter: measure this spec's env in this process, print JSON
    parser.add_argument("--in-process", metavar="SPEC_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)
    args = parser.parse_args()
    steps = 10 if args.smoke else args.steps
    warmup = 2 if args.smoke else args.warmup
    if args.in_process:
        source = EnvironmentSpec.model_validate_json(args.in_process).source
        print(json.dumps(in_process(source, steps, warmup)))
        return
    require_runtimes()
    starts = 1 if args.smoke else args.starts
    cores = os.cpu_count() or 1
    report: dict[str, Any] = {
        "steps": steps, "smoke": args.smoke, "cores": cores,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip
    for name, (entry, source) in cases(args.smoke).items():
        spec = EnvironmentSpec(id="bench", name=name, source=source, mode="sync", fps=entry.fps)
        if entry.runtime == runtimes.APP:
            local = in_process(source, steps, warmup)
        else:
            local = in_runtime(entry.runtime, spec, steps, warmup)
        with tempfile.TemporaryDirectory() as tmp:
            worker = asyncio.run(through_worker(spec, steps, tmp, warmup))
        busy = worker["live_step_cpu_ms"] * entry.fps / 1000  # cores per teleoperator
        fit = math.floor(cores / busy) if busy > 0 else 1
        floor = local["physics_and_shown_cpu_ms"]["mean"]
        live = {"live_step_cpu_ms": worker["live_step_cpu_ms"],
                "physics_and_shown_cpu_ms": floor,
                "times_physics_and_shown": round(worker["live_step_cpu_ms"] / floor, 2)
                if floor > 0 else None}  # fmt: skip
        async_spec = spec.model_copy(update={"mode": "async"})
        seconds, cap = (1.0, 1) if args.smoke else (args.window, 2 * max(1, fit) + 2)
        report[name] = {
            "id": source.id, "kwargs": source.kwargs, "runtime": entry.runtime,
            "control_hz": entry.fps, **local, **worker, "live_step": live,
            "teleoperators": {
                "cores_each": round(busy, 3),
                "fit_on_cores": fit,
                **teleoperators(async_spec, fit, seconds, cap),
            },
        }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        report["worker_start_s"] = asyncio.run(worker_starts(starts, tmp))
        report["ready_gate_s"] = asyncio.run(ready_gates(starts, tmp))
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
