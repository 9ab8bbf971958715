"""Per-step overhead of the runtime (worker round trip + JPEG encode + envlogger record).

For each case, in the same run: the bare ``env.step + env.render`` time in this process, and
the time of one sync-mode ``EnvWorker.send_input`` round trip (map input, step, render,
encode, reply; the worker records the step right after replying) through a real worker,
twice:

- ``back_to_back``: the next input is sent as soon as the reply arrives, so it waits for the
  previous step's recording (the throughput figure);
- ``paced``: one input every ``--pace-ms`` (5 ms by default, still faster than any player),
  so the recording of a step happens in the gap, as with real players: the reply path alone.

Also splits out encode, record (envlogger codec + Riegeli, step journal included) and
journal (the step journal's write, recording with and without it) costs measured in-process,
and what one flush of the log costs after k recorded steps (``flush_after_k_steps``; a
worker flushes every ``--flush-interval`` seconds, so at 30 steps/s a flush covers
30 × interval steps, and k = 1 is the price of flushing every step before its reply).
Prints JSON (milliseconds; median, p90, p99).

The worker is driven from uvloop, the event loop uvicorn serves with (``--loop asyncio``
for the standard one). ``--smoke`` runs a few steps of each case: it checks that the
benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/step_overhead.py [--steps 1000] [--pace-ms 5]
                                                 [--flush-interval 0.2] [--smoke]
                                                 [--case fetch_256x256]...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from server.recording.writer import (  # noqa: E402
    FLUSH_INTERVAL_S,
    EpisodeWriter,
    episode_metadata,
)
from server.runtime import EnvWorker  # noqa: E402
from server.runtime.adapters import build_adapter  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.runtime.catalog import CATALOG  # noqa: E402
from server.runtime.frames import QUALITY, encode_jpeg  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of(["gymnasium", "ale_py", "minigrid"])
CASES = {
    "atari_210x160": {"kind": "gymnasium", "id": "ALE/Pong-v5"},
    "minigrid_512x512": {
        "kind": "gymnasium",
        "id": "MiniGrid-Empty-8x8-v0",
        "kwargs": {"tile_size": 64, "max_steps": 100_000},
    },
}
# Robot manipulation (docs/runtime.md, "Robot manipulation"): the catalog's Fetch at 256 px,
# where its suite is installed here (the test tools pin the robotics runtime's MuJoCo).
if CATALOG["FetchPickAndPlace"].installed():
    CASES["fetch_256x256"] = CATALOG["FetchPickAndPlace"].source().model_dump()


def stats(samples: list[float]) -> dict[str, float]:
    """Median, p90 and p99 in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {
        "median": round(statistics.median(ms), 4),
        "p90": round(ms[int(len(ms) * 0.9)], 4),
        "p99": round(ms[int(len(ms) * 0.99)], 4),
    }


def _noop(space: Any) -> Any:
    """Action 0 of a discrete space, the zero vector of a Box (Fetch: hold still)."""
    shape = getattr(space, "shape", ())
    return np.zeros(shape, space.dtype) if shape else np.int64(0)


def bare(spec: EnvironmentSpec, steps: int, repeats: int) -> dict[str, Any]:
    """env.step + render in this process; then encode and record costs in isolation."""
    adapter = build_adapter(spec.source, ALLOWED)
    env = adapter.env  # the Gymnasium env itself
    env.reset(seed=0)
    step_render, encode = [], []
    frame = None
    for i in range(steps + 50):
        t0 = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(_noop(env.action_space))
        frame = env.render()
        t1 = time.perf_counter()
        encode_jpeg(np.ascontiguousarray(frame), QUALITY["medium"])
        t2 = time.perf_counter()
        if terminated or truncated:
            env.reset()
        if i >= 50:
            step_render.append(t1 - t0)
            encode.append(t2 - t1)
    assert frame is not None
    # record only: the adapter's dm_env step vs the same step through EpisodeWriter
    jpeg = encode_jpeg(np.ascontiguousarray(frame), QUALITY["medium"])
    record_fn = lambda *_: {"frame": jpeg, "input": "{}", "timing": "{}", "info": "{}"}  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        meta = episode_metadata(episode_id="b", study_id=0, env_id="b", env_config="{}", seed=0)
        plain, recorded, unjournaled = [], [], []
        action = _noop(env.action_space)
        for journal, times in ((True, recorded), (False, unjournaled), (True, recorded)):
            # the step journal (server/recording/journal.py) on and off, alternating
            writer = EpisodeWriter(adapter, Path(tmp) / f"b{len(times)}{journal}", meta,
                                   record_fn, journal=journal)  # fmt: skip
            writer.reset()
            for _ in range(steps // 2 if journal else steps):
                t0 = time.perf_counter()
                ts = adapter.step(action)
                t1 = time.perf_counter()
                ts2 = writer.step(action)
                t2 = time.perf_counter()
                if journal:
                    plain.append(t1 - t0)
                times.append(t2 - t1)
                if ts.last() or ts2.last():
                    break
            writer.finalize()
        flushes = flush_costs(adapter, record_fn, Path(tmp), repeats)
    adapter.close()
    return {
        "flushes": flushes,
        "frame_shape": list(np.asarray(frame).shape),
        "jpeg_bytes": len(jpeg),
        "step_render": step_render,
        "encode": encode,
        "dm_step": plain,
        "dm_step_recorded": recorded,
        "dm_step_recorded_unjournaled": unjournaled,
    }


FLUSH_AFTER = (1, 3, 6, 8, 15, 30)  # steps per flush: every step; 0.1-1 s at 30 steps/s


def flush_costs(adapter: Any, record_fn: Any, root: Path, repeats: int) -> dict[str, Any]:
    """One ``EpisodeWriter.flush()`` after k recorded steps, for each k in FLUSH_AFTER."""
    meta = episode_metadata(episode_id="f", study_id=0, env_id="f", env_config="{}", seed=0)
    count = iter(range(10**6))
    action = _noop(adapter.env.action_space)

    def fresh() -> EpisodeWriter:
        writer = EpisodeWriter(adapter, root / f"f{next(count)}", meta, record_fn,
                               flush_interval_s=3600)  # fmt: skip
        writer.reset()
        writer.flush()
        return writer

    writer = fresh()
    out: dict[str, Any] = {}
    for k in FLUSH_AFTER:
        samples = []
        for _ in range(repeats):
            for _ in range(k):
                if writer.step(action).last():
                    writer.finalize()
                    writer = fresh()
            t0 = time.perf_counter()
            writer.flush()
            samples.append(time.perf_counter() - t0)
        out[f"flush_after_{k}_steps_ms"] = stats(samples)
        out[f"flush_per_step_at_k{k}_ms"] = round(statistics.median(samples) * 1000 / k, 4)
    writer.finalize()
    return out


async def through_worker(
    spec: EnvironmentSpec, steps: int, data_root: str, pace_s: float = 0.0,
    flush_interval_s: float = FLUSH_INTERVAL_S,
) -> tuple[list, list]:  # fmt: skip
    """send_input round trips of a sync-mode worker, and the worker's own time per step.

    With ``pace_s`` an input is sent every ``pace_s`` seconds instead of back to back."""
    worker = await EnvWorker.start(
        spec, allowed=ALLOWED, study_id="bench", data_root=data_root,
        flush_interval_s=flush_interval_s,
    )  # fmt: skip
    try:
        await worker.begin_episode("bench", 0)
        times, work = [], []
        next_send = time.perf_counter()
        for i in range(steps + 50):
            if pace_s:
                next_send += pace_s
                await asyncio.sleep(max(0.0, next_send - time.perf_counter()))
            t0 = time.perf_counter()
            event = await worker.send_input({"keys": []}, {"input_sent": time.time() * 1000})
            assert event is not None
            if i >= 50:
                times.append(time.perf_counter() - t0)
                work.append(event.work_ms / 1000)
            if event.done:
                await worker.begin_episode(f"bench{i}", 0)
        await worker.end_episode("benchmark")
        return times, work
    finally:
        await worker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--pace-ms", type=float, default=5.0)
    parser.add_argument("--flush-interval", type=float, default=FLUSH_INTERVAL_S)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--smoke", action="store_true", help="a few steps: does it still run?")
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="only these")
    args = parser.parse_args()
    if args.smoke:
        args.steps = 20
    run = asyncio.run
    if args.loop == "uvloop":
        import uvloop

        run = uvloop.run
    report: dict[str, Any] = {
        "steps": args.steps, "pace_ms": args.pace_ms, "flush_interval_s": args.flush_interval,
        "loop": args.loop, "smoke": args.smoke,
    }  # fmt: skip
    for name, source in CASES.items():
        if args.case and name not in args.case:
            continue
        noop: Any = [0.0] * 4 if name.startswith("fetch") else 0
        spec = EnvironmentSpec(id="bench", name=name, source=source, controls={"noop": noop})
        with tempfile.TemporaryDirectory() as tmp:
            round_trips, work = run(
                through_worker(spec, args.steps, tmp, flush_interval_s=args.flush_interval)
            )
        with tempfile.TemporaryDirectory() as tmp:
            paced, paced_work = run(
                through_worker(spec, args.steps, tmp, args.pace_ms / 1000, args.flush_interval)
            )
        local = bare(spec, args.steps, repeats=3 if args.smoke else 40)
        base = statistics.median(local["step_render"])
        full = statistics.median(round_trips)
        reply = statistics.median(paced)
        record = statistics.median(local["dm_step_recorded"]) - statistics.median(local["dm_step"])
        journal = statistics.median(local["dm_step_recorded"]) - statistics.median(
            local["dm_step_recorded_unjournaled"]
        )
        report[name] = {
            "frame_shape": local["frame_shape"],
            "jpeg_bytes_q75": local["jpeg_bytes"],
            "bare_step_render_ms": stats(local["step_render"]),
            "back_to_back": {
                "worker_round_trip_ms": stats(round_trips),
                "in_worker_ms": stats(work),
                "overhead_ms": round((full - base) * 1000, 4),
                "ratio": round(full / base, 3),
            },
            "paced": {
                "worker_round_trip_ms": stats(paced),
                "in_worker_ms": stats(paced_work),
                "overhead_ms": round((reply - base) * 1000, 4),
                "ratio": round(reply / base, 3),
            },
            "parts_ms": {
                "jpeg_encode": stats(local["encode"]),
                "record_median": round(record * 1000, 4),
                "journal_median": round(journal * 1000, 4),
            },
            "flushes": local["flushes"],
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
