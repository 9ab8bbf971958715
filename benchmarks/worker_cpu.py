"""CPU a worker process spends per Pong step, with several sessions in one process.

The figure behind players per core, without the app, the players' sockets or a loaded
machine in the way: ``--sessions`` Pong sessions (the concurrency benchmark's game, async,
60 fps) share one real worker process (``STUDIO_SESSIONS_PER_WORKER``'s packing: the first
session plays until its environment's cost is measured, then the others join it). This
process plays the app's part: it takes every step's event and hands the worker the
players' acks every 30 frames and a new input twice a second, as the app does. Over
``--seconds`` it reads the worker's CPU time (user + system, all its threads, from
``/proc``) and prints JSON: milliseconds of CPU per step and % of a core per session,
``--repeat`` times (median and spread). ``--smoke`` plays half a second: it checks that the
benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/worker_cpu.py [--sessions 8] [--seconds 6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.concurrency import PONG, stat_fields  # noqa: E402
from server.runtime import EnvWorker  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of(["gymnasium", "ale_py"])
ACK_EVERY = 30  # frames: how often the app hands a player's acks to the worker
INPUTS = ({"keys": ["ArrowUp"]}, {"keys": ["ArrowDown"]})
WARMUP_S = 2.5  # the first session's cost is measured after 2 s (COST_WINDOW_S)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), in seconds."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Player:
    """The app's part for one session: events in, acks and inputs out."""

    def __init__(self, worker: EnvWorker) -> None:
        self.worker = worker
        self.steps = 0
        self.acks: list[dict[str, Any]] = []

    async def play(self, episode: str) -> None:
        await self.worker.begin_episode(episode)
        async for event in self.worker.events():
            self.steps += 1
            self.acks.append({"step": event.step, "drawn_ms": event.worker_ms})
            if len(self.acks) >= ACK_EVERY:
                acks, self.acks = self.acks, []
                await self.worker.send_acks(acks)
            if self.steps % 30 == 0:
                await self.worker.send_input(INPUTS[self.steps // 30 % 2], {})


async def one_run(sessions: int, seconds: float, data_root: Path) -> dict[str, Any]:
    spec = EnvironmentSpec.model_validate({**PONG, "max_steps": 1_000_000})
    workers: list[EnvWorker] = []
    tasks: list[asyncio.Task[None]] = []
    players: list[Player] = []

    async def join(index: int) -> None:
        worker = await EnvWorker.start(
            spec, allowed=ALLOWED, study_id="bench", data_root=data_root,
            sessions_per_worker=sessions,
        )  # fmt: skip
        player = Player(worker)
        workers.append(worker)
        players.append(player)
        tasks.append(asyncio.create_task(player.play(f"ep-{index}-{time.time_ns()}")))

    try:
        await join(0)
        await asyncio.sleep(WARMUP_S if sessions > 1 else 0.2)
        for index in range(1, sessions):
            await join(index)
        pids = {worker.pid for worker in workers}
        await asyncio.sleep(1.0)  # every session stepping
        cpu0 = sum(cpu_seconds(pid) for pid in pids if pid)
        steps0, t0 = sum(p.steps for p in players), time.monotonic()
        await asyncio.sleep(seconds)
        cpu = sum(cpu_seconds(pid) for pid in pids if pid) - cpu0
        steps, wall = sum(p.steps for p in players) - steps0, time.monotonic() - t0
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*(worker.close() for worker in workers), return_exceptions=True)
    return {
        "processes": len(pids),
        "steps_per_s": round(steps / wall, 1),
        "cpu_ms_per_step": round(1000 * cpu / max(steps, 1), 4),
        "cpu_pct_per_session": round(100 * cpu / wall / sessions, 2),
    }


def session_args(doc: str, seconds: float) -> argparse.Namespace:
    """``--sessions`` (8), ``--seconds``, ``--repeat`` (3) and ``--smoke`` (2 sessions, half a
    second, once): the arguments of the benchmarks that play Pong sessions in a process."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="half a second: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.seconds, args.repeat = 2, 0.5, 1
    return args


def main() -> None:
    args = session_args(__doc__, seconds=6.0)
    runs = []
    with tempfile.TemporaryDirectory(prefix="worker-cpu-") as tmp:
        for _ in range(args.repeat):
            runs.append(asyncio.run(one_run(args.sessions, args.seconds, Path(tmp))))
    per_step = [run["cpu_ms_per_step"] for run in runs]
    print(json.dumps({
        "sessions": args.sessions,
        "seconds": args.seconds,
        "cpu_ms_per_step": statistics.median(per_step),
        "cpu_ms_per_step_range": [min(per_step), max(per_step)],
        "cpu_pct_per_session": statistics.median(r["cpu_pct_per_session"] for r in runs),
        "load_average": os.getloadavg()[0],
        "runs": runs,
        "smoke": args.smoke,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
