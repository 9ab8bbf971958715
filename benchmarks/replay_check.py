"""Replay verification (docs/review.md, "Replay verification"): what it costs.

1. ``environments``: per environment, one episode of ``--steps`` steps recorded by a real
   worker (``EnvWorker`` in sync mode, inputs back to back: the worker maps, steps, renders
   and encodes each step and writes the log exactly as for a player; the study's
   ``max_steps`` ends it), then verified with ``replay_process.verify_log`` as the app's
   background runner does (a process in the environment's runtime, at nice 19, with the
   app's default time and memory limits). Beside it, a 1-step episode of the same worker,
   verified the same way: the fixed cost of a check (interpreter start, imports, building
   the environment). Figures: ``wall_s`` (the whole check), ``in_process_s`` (its
   ``seconds``: from the payload read to the verdict), ``start_s`` (wall − in_process:
   the interpreter and its imports before that), ``overall_steps_per_s`` (steps / wall
   of the long check), ``replay_steps_per_s`` (the marginal rate: extra steps / extra wall
   of the long check over the 1-step one; None when that difference is lost in noise),
   ``fps`` (the catalog's real-time rate of the entry) and ``times_real_time`` (each rate
   over ``fps``). CartPole is driven by a balancing controller run on a twin of the same
   seed (random presses end it in a few dozen steps); the others get presses that change
   every 10 steps. Pong has sticky actions off (``repeat_action_probability=0``);
   FetchPickAndPlace only when gymnasium-robotics is installed, dm_control and robosuite
   only when their runtime is (``make runtimes``); the others say why they were skipped.

2. ``players``: K players in async mode (PickCube at its 25 fps, a worker process each,
   their input changing twice a second), K chosen so that they keep about one core busy
   (one player's worker CPU measured first; ``--players`` fixes K), measured for
   ``--seconds`` without verification and then for ``--seconds`` with verification running
   continuously beside them, ``--rounds`` times in turn (load from outside falls on both):
   ``verify_log`` of the long PickCube episode of part 1 in a loop, one at a time as with
   ``replay_check_workers=1``. Per condition: ``late_frames_pct``
   (a step more than 1.5 periods after the previous one, on the worker's clock:
   ``worker_ms``), ``missed_ticks``, ``gap_p99_ms``, tick lateness p50/p99 (each step's
   time against its episode's own best grid: ``t0 + k / fps``), the machine's busy share,
   the players' CPU, and with verification the checks done; then the ratios.

Prints JSON. ``--smoke`` records a few steps of CartPole and PickCube and plays one player
for a second each way: it checks that the benchmark still runs (``make test``), its figures
mean nothing.

    .venv/bin/python benchmarks/replay_check.py [--steps 300] [--seconds 20] [--players K] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from concurrency import machine_cpu, stat_fields  # noqa: E402

from server.core.config import Settings  # noqa: E402
from server.recording import format as fmt  # noqa: E402
from server.runtime import EnvWorker, completion, replay_process, runtimes  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.runtime.catalog import CATALOG, default_controls  # noqa: E402
from server.runtime.hosted_env import MAX_CATCH_UP_S  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of()
STUDY = "bench"
SEED = 7
TIMEOUT_S = float(Settings.model_fields["replay_check_timeout_s"].default)
MEMORY_MB = int(Settings.model_fields["replay_check_memory_mb"].default)
CPU_SHARE = float(Settings.model_fields["replay_check_cpu_share"].default)
# (report name, catalog entry, kwargs over the entry's)
ENVIRONMENTS = (
    ("cartpole", "CartPole", {}),
    ("pong", "Pong", {"repeat_action_probability": 0.0}),
    ("pick_cube", "PickCube", {}),
    ("fetch_pick_and_place", "FetchPickAndPlace", {}),
    ("dm_control_cartpole_swingup", "dm_control-cartpole-swingup", {}),
    ("robosuite_lift", "Robosuite-Lift", {}),
    ("robosuite_pick_place_can", "Robosuite-PickPlaceCan", {}),
)
SMOKE_ENVIRONMENTS = ("cartpole", "pick_cube")
PLAYER_ENTRY = "PickCube"
PLAYERS_MAX = 12
LATE = 1.5  # a step this many periods after the previous one is late


def _spec(key: str, kwargs: dict[str, Any], mode: str, max_steps: int | None) -> EnvironmentSpec:
    entry = CATALOG[key]
    source = entry.source().model_dump()
    source["kwargs"] = {**source["kwargs"], **kwargs}
    return EnvironmentSpec.model_validate(
        {"id": "env", "name": key, "source": source, "mode": mode, "fps": entry.fps,
         "max_steps": max_steps}
    )  # fmt: skip


def unavailable(key: str) -> str | None:
    """Why the entry cannot run here, or None."""
    entry = CATALOG[key]
    if entry.runtime != runtimes.APP:
        found = runtimes.state(entry.runtime)
        if not found.ok:
            return f"the {entry.runtime} runtime: {found.state}: {found.message}"
        return None
    return None if entry.installed() else "its suite is not installed"


class Presses:
    """The keys of each step: a CartPole balancer on a twin of the same seed, else presses of
    the entry's controls that change every 10 steps."""

    def __init__(self, key: str, spec: EnvironmentSpec, seed: int) -> None:
        self.keys = list(default_controls(spec.source).keys)
        self.twin: Any = None
        if key == "CartPole":
            import gymnasium as gym

            self.twin = gym.make("CartPole-v1")
            self.obs, _ = self.twin.reset(seed=seed)

    def __call__(self, i: int) -> list[str]:
        if self.twin is None:
            return [self.keys[(i // 10) % len(self.keys)]]
        x, x_dot, theta, theta_dot = (float(v) for v in self.obs)
        action = int(10 * theta + 2 * theta_dot + 0.1 * x + 0.5 * x_dot > 0)
        self.obs, *_ = self.twin.step(action)
        return ["ArrowRight" if action else "ArrowLeft"]


async def record(key: str, kwargs: dict[str, Any], steps: int, data_root: str) -> dict[str, Any]:
    """An episode of ``steps`` steps (ended by the study's max_steps) and a 1-step episode
    (ended as the player cancels), recorded by one real worker: their log folders and ends."""
    spec = _spec(key, kwargs, "sync", steps)
    worker = await EnvWorker.start(spec, allowed=ALLOWED, study_id=STUDY, data_root=data_root,
                                   timeout=180, reply_timeout=60)  # fmt: skip
    out: dict[str, Any] = {}
    try:
        presses = Presses(key, spec, SEED)
        long_id = f"{key}-long"
        await worker.begin_episode(long_id, SEED)
        started = time.perf_counter()
        end_reason = None
        for i in range(steps):
            event = await worker.send_input({"keys": presses(i)}, {"input_sent": time.time() * 1e3})
            assert event is not None
            if event.done:
                end_reason, done_steps = event.end_reason, event.step
                break
        else:
            summary = await worker.end_episode("canceled")
            end_reason, done_steps = "canceled", (summary or {}).get("num_steps", steps + 1) - 1
        out["record_s"] = time.perf_counter() - started
        out["long"] = (long_id, end_reason, done_steps)
        one_id = f"{key}-one"
        await worker.begin_episode(one_id, SEED)
        await worker.send_input({"keys": presses(0)}, {"input_sent": time.time() * 1e3})
        await worker.end_episode("canceled")
        out["one"] = (one_id, "canceled", 1)
    finally:
        await worker.close()
    return out


def verify(log_dir: Path, runtime: str, end_reason: str | None) -> dict[str, Any]:
    """One check as the app runs it, timed: its verdict with ``wall_s`` (and, for a log whose
    images the play path left out, ``completion_s``: drawing them first, as the app does)."""
    started = time.perf_counter()
    drawn = completion.complete_log(log_dir, runtime, ALLOWED, timeout_s=TIMEOUT_S,
                                    memory_mb=MEMORY_MB, cpu_share=CPU_SHARE)  # fmt: skip
    assert drawn is not None and drawn["result"] == "completed", drawn
    completed = time.perf_counter()
    result = replay_process.verify_log(log_dir, runtime, ALLOWED, end_reason=end_reason,
                                       timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB,
                                       cpu_share=CPU_SHARE)  # fmt: skip
    assert result is not None
    result["wall_s"] = time.perf_counter() - completed
    result["completion_s"] = None if drawn["steps"] is None else round(completed - started, 3)
    return result


def _rate(steps: float, seconds: float) -> float | None:
    return round(steps / seconds, 1) if seconds > 0 else None


def measure_environment(key: str, kwargs: dict[str, Any], steps: int) -> dict[str, Any]:
    """Part 1 for one entry (its long episode's log stays for part 2 in ``keep``)."""
    entry = CATALOG[key]
    data_root = tempfile.mkdtemp(prefix="studio-replay-bench-")
    recorded = asyncio.run(record(key, kwargs, steps, data_root))
    checks = {}
    for which in ("long", "one"):
        episode_id, end_reason, _ = recorded[which]
        log_dir = fmt.episode_dir(Path(data_root), STUDY, episode_id)
        checks[which] = verify(log_dir, entry.runtime, end_reason)
        checks[which]["log_dir"] = str(log_dir)
    long, one = checks["long"], checks["one"]
    for check in (long, one):
        if check["verdict"] != "verified":
            sys.exit(f"{key}: the check did not verify its episode: {json.dumps(check)[:2000]}")
    n = int(long["steps"])
    extra_wall = long["wall_s"] - one["wall_s"]
    replay_rate = _rate(n - 1, extra_wall) if extra_wall > 0.05 * long["wall_s"] else None
    overall = _rate(n, long["wall_s"])
    fps = entry.fps

    def times(rate: float | None) -> float | None:
        return round(rate / fps, 1) if rate else None

    return {
        "entry": key, "runtime": entry.runtime, "kwargs": {**entry.source().kwargs, **kwargs},
        "fps": fps, "steps": n, "end_reason": recorded["long"][1],
        "record_s": round(recorded["record_s"], 2),
        "long": {"wall_s": round(long["wall_s"], 3), "in_process_s": long["seconds"],
                 "start_s": round(long["wall_s"] - long["seconds"], 3),
                 "completion_s": long["completion_s"]},
        "one_step": {"wall_s": round(one["wall_s"], 3), "in_process_s": one["seconds"],
                     "start_s": round(one["wall_s"] - one["seconds"], 3)},
        "overall_steps_per_s": overall, "replay_steps_per_s": replay_rate,
        "times_real_time_overall": times(overall), "times_real_time_replay": times(replay_rate),
        "real_time_s": round(n / fps, 1),
        "_log_dir": long["log_dir"], "_data_root": data_root,
    }  # fmt: skip


# -- part 2: players beside verification -----------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (0 when it is gone)."""
    try:
        fields = stat_fields(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class AsyncPlayer:
    """One player in async mode: a worker of its own; every step's ``worker_ms`` kept."""

    def __init__(self, index: int, spec: EnvironmentSpec, data_root: str) -> None:
        self.index, self.spec, self.data_root = index, spec, data_root
        self.times: list[tuple[str, int, float]] = []  # (episode, step, worker seconds)
        self.worker: EnvWorker | None = None
        self.playing = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: BaseException | None = None

    async def run(self) -> None:
        try:
            self.worker = worker = await EnvWorker.start(
                self.spec, allowed=ALLOWED, study_id=STUDY, data_root=self.data_root,
                timeout=180, reply_timeout=60,
            )  # fmt: skip
            episodes = 0
            await worker.begin_episode(f"player{self.index}-{episodes}", self.index)
            inputs = asyncio.create_task(self._inputs(worker))
            async for event in worker.events():
                self.times.append((event.episode_id, event.step, event.worker_ms / 1000))
                self.playing.set()
                if self.stop.is_set():
                    break
                if event.done:
                    episodes += 1
                    await worker.begin_episode(f"player{self.index}-{episodes}", self.index)
            inputs.cancel()
            await worker.end_episode("canceled")
        except BaseException as exc:  # reported by the round
            self.error = exc
            self.playing.set()
        finally:
            if self.worker is not None:
                await self.worker.close()

    async def _inputs(self, worker: EnvWorker) -> None:
        keys = list(default_controls(self.spec.source).keys)[:4]
        i = 0
        while True:
            await worker.send_input({"keys": [keys[i % len(keys)]]},
                                    {"input_sent": time.time() * 1e3})  # fmt: skip
            i += 1
            await asyncio.sleep(0.5)

    def cpu(self) -> float:
        pid = self.worker.pid if self.worker is not None else None
        return cpu_seconds(pid) if pid else 0.0


def window_figures(
    players: list[AsyncPlayer], windows: list[tuple[float, float]], fps: int
) -> dict[str, Any]:
    """Late steps and tick lateness of the steps made in ``windows`` (worker clock).

    A step's lateness is its time against its run's best grid (``t0 + k / fps``); a run
    starts again where the worker's clock skipped (over ``MAX_CATCH_UP_S`` behind)."""
    period = 1.0 / fps
    gaps: list[float] = []
    lateness: list[float] = []
    steps = 0
    for t0, t1 in windows:
        for p in players:
            runs: dict[str, list[tuple[int, float]]] = {}
            for episode, step, at in p.times:
                if t0 <= at <= t1:
                    runs.setdefault(episode, []).append((step, at))
            for run in runs.values():
                steps += len(run)
                gaps += [b[1] - a[1] for a, b in zip(run, run[1:], strict=False)]
                late: list[float] = []
                for step, at in run:
                    late.append(at - step * period)
                    if late[-1] - min(late) > MAX_CATCH_UP_S + period:  # the clock skipped
                        lateness += [x - min(late[:-1]) for x in late[:-1]]
                        late = [late[-1]]
                lateness += [x - min(late) for x in late]
    gaps.sort()
    lateness.sort()
    seconds = sum(t1 - t0 for t0, t1 in windows)

    def pick(values: list[float], q: float) -> float | None:
        return round(values[int(q * (len(values) - 1))] * 1000, 2) if values else None

    return {
        "steps": steps,
        "steps_per_s_per_player": round(steps / seconds / max(1, len(players)), 2),
        "late_frames_pct": round(100 * sum(g > LATE * period for g in gaps) / max(1, len(gaps)), 2),
        "missed_ticks": sum(max(0, round(g / period) - 1) for g in gaps),
        "gap_p50_ms": pick(gaps, 0.5),
        "gap_p99_ms": pick(gaps, 0.99),
        "tick_lateness_p50_ms": pick(lateness, 0.5),
        "tick_lateness_p99_ms": pick(lateness, 0.99),
    }


class VerifyLoop:
    """``verify_log`` of one log, again and again, in a thread (as the background runner)."""

    def __init__(self, log_dir: Path, runtime: str, cpu_share: float | None = CPU_SHARE) -> None:
        self.log_dir, self.runtime, self.cpu_share = log_dir, runtime, cpu_share
        self.stop = threading.Event()
        self.done: list[tuple[float, float, str]] = []  # (started, ended, verdict)
        self.running: float | None = None  # when the check under way started
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.running = started = time.time()
            result = replay_process.verify_log(
                self.log_dir, self.runtime, ALLOWED, end_reason=fmt.END_MAX_STEPS,
                timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, cancel=self.stop,
                cpu_share=self.cpu_share,
            )  # fmt: skip
            if result is not None:
                verdict = str(result["verdict"])
                if verdict != "verified":
                    verdict += f": {result.get('reason')}: {result.get('message')}"[:300]
                self.done.append((started, time.time(), verdict))
            self.running = None

    def busy_s(self, t0: float, t1: float) -> float:
        """Seconds of ``[t0, t1]`` in which a check was under way."""
        spans = [(s, e) for s, e, _ in self.done]
        if self.running is not None:
            spans.append((self.running, t1))
        return sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in spans)


async def _window(players: list[AsyncPlayer], seconds: float) -> dict[str, Any]:
    """Counters over ``seconds`` of play: the window, the players' CPU, the machine's."""
    cpu0, machine0, t0 = sum(p.cpu() for p in players), machine_cpu(), time.time()
    await asyncio.sleep(seconds)
    cpu1, machine1, t1 = sum(p.cpu() for p in players), machine_cpu(), time.time()
    return {"window": (t0, t1), "cpu": cpu1 - cpu0,
            "machine": [b - a for a, b in zip(machine0, machine1, strict=True)]}  # fmt: skip


def _condition(players: list[AsyncPlayer], counters: list[dict[str, Any]], fps: int) -> Any:
    """The figures of one condition over its windows."""
    windows = [c["window"] for c in counters]
    figures = window_figures(players, windows, fps)
    seconds = sum(t1 - t0 for t0, t1 in windows)
    used = [sum(c["machine"][i] for c in counters) for i in range(8)]
    total = max(1, sum(used))
    figures["players_cpu_cores"] = round(sum(c["cpu"] for c in counters) / seconds, 3)
    figures["machine_busy_pct"] = round(100 * (total - used[3] - used[4]) / total, 1)
    figures["machine_nice_pct"] = round(100 * used[1] / total, 1)
    return figures, windows


async def players_round(
    log_dir: Path, players_wanted: int | None, seconds: float, rounds: int, smoke: bool
) -> dict[str, Any]:
    """Part 2: K players without, then with, verification running beside them."""
    spec = _spec(PLAYER_ENTRY, {}, "async", None)
    data_root = tempfile.mkdtemp(prefix="studio-replay-players-")
    players: list[AsyncPlayer] = []
    tasks: list[asyncio.Task[None]] = []

    async def add(n: int) -> None:
        for _ in range(n):
            player = AsyncPlayer(len(players), spec, data_root)
            players.append(player)
            tasks.append(asyncio.create_task(player.run()))
        await asyncio.gather(*(p.playing.wait() for p in players))
        for p in players:
            if p.error is not None:
                raise p.error

    try:
        await add(1)
        await asyncio.sleep(1.0)
        c0, w0 = players[0].cpu(), time.monotonic()
        await asyncio.sleep(1.0 if smoke else 4.0)
        each = (players[0].cpu() - c0) / (time.monotonic() - w0)
        k = players_wanted or max(1, min(PLAYERS_MAX, round(1.0 / each) if each > 0 else 1))
        if smoke:
            k = 1
        await add(k - 1)
        await asyncio.sleep(1.0 if smoke else 3.0)  # the new workers' start-up is over
        # alternating windows, so that load from outside falls on every condition: none,
        # a check as the app runs it (nice 19 and its CPU share), and (not in a smoke run)
        # one at nice 19 only, the way before the share
        shares = {"with_verification": CPU_SHARE}
        if not smoke:
            shares["with_verification_nice_only"] = None
        without: list[dict[str, Any]] = []
        beside: dict[str, list[dict[str, Any]]] = {name: [] for name in shares}
        done: dict[str, list[tuple[float, float, str]]] = {name: [] for name in shares}
        overlap = dict.fromkeys(shares, 0.0)
        for _ in range(rounds):
            without.append(await _window(players, seconds))
            for name, share in shares.items():
                loop = VerifyLoop(log_dir, CATALOG[PLAYER_ENTRY].runtime, share)
                loop.thread.start()
                await asyncio.sleep(0.5)
                beside[name].append(await _window(players, seconds))
                t0, t1 = beside[name][-1]["window"]
                overlap[name] += loop.busy_s(t0, t1)
                loop.stop.set()
                await asyncio.to_thread(loop.thread.join, 60)
                done[name] += [d for d in loop.done if t0 <= d[1] <= t1]
        alone, _ = _condition(players, without, spec.fps)
        figures: dict[str, dict[str, Any]] = {}
        for name in shares:
            found, windows = _condition(players, beside[name], spec.fps)
            checks = done[name]
            found["cpu_share"] = shares[name]
            found["checks_finished"] = len(checks)
            found["checks_verified"] = sum(v == "verified" for _, _, v in checks)
            found["checks_not_verified"] = sorted({v for _, _, v in checks} - {"verified"})
            found["check_s_median"] = (
                round(statistics.median(e - s for s, e, _ in checks), 2) if checks else None
            )
            total = sum(t1 - t0 for t0, t1 in windows)
            found["verifying_pct_of_window"] = round(100 * overlap[name] / total, 1)
            figures[name] = found
    finally:
        for p in players:
            p.stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        shutil.rmtree(data_root, ignore_errors=True)

    def ratios(beside: dict[str, Any]) -> dict[str, float | None]:
        keys = ("late_frames_pct", "missed_ticks", "tick_lateness_p50_ms",
                "tick_lateness_p99_ms", "gap_p99_ms", "steps_per_s_per_player")  # fmt: skip
        out: dict[str, float | None] = {}
        for key in keys:
            a, b = alone.get(key), beside.get(key)
            out[key] = round(b / a, 2) if a and b is not None else None
        return out

    report = {
        "entry": PLAYER_ENTRY, "mode": "async", "fps": spec.fps, "players": k,
        "one_player_cpu_cores": round(each, 3), "seconds_per_window": seconds,
        "rounds": rounds, "without_verification": alone, **figures,
        "ratios": ratios(figures["with_verification"]),
    }  # fmt: skip
    if "with_verification_nice_only" in figures:
        report["ratios_nice_only"] = ratios(figures["with_verification_nice_only"])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="steps of each long episode")
    parser.add_argument("--seconds", type=float, default=15.0, help="each players' window")
    parser.add_argument("--rounds", type=int, default=2, help="windows of each condition")
    parser.add_argument("--players", type=int, default=None, help="K (default: ~one core)")
    parser.add_argument("--only", default=None, help="comma-separated report names of part 1")
    parser.add_argument("--smoke", action="store_true", help="a few steps: does it still run?")
    args = parser.parse_args()
    steps, seconds = (12, 1.0) if args.smoke else (args.steps, args.seconds)
    rounds = 1 if args.smoke else args.rounds
    names = SMOKE_ENVIRONMENTS if args.smoke else [n for n, _, _ in ENVIRONMENTS]
    if args.only:
        names = args.only.split(",")
    started = time.monotonic()
    report: dict[str, Any] = {
        "benchmark": "replay_check", "smoke": args.smoke,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"), "cores": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "steps": steps, "environments": {}, "skipped": {},
    }  # fmt: skip
    for name, key, kwargs in ENVIRONMENTS:
        if name not in names:
            continue
        why = unavailable(key)
        if why:
            report["skipped"][name] = why
            continue
        report["environments"][name] = measure_environment(key, kwargs, steps)
    cube = report["environments"].get("pick_cube")
    if cube is None:
        cube = measure_environment(PLAYER_ENTRY, {}, steps)
    report["players"] = asyncio.run(
        players_round(Path(cube["_log_dir"]), args.players, seconds, rounds, args.smoke)
    )
    for found in [*report["environments"].values(), cube]:
        found.pop("_log_dir", None)
        shutil.rmtree(found.pop("_data_root", ""), ignore_errors=True)
    starts = [e["one_step"]["wall_s"] for e in report["environments"].values()]
    report["one_step_check_s_median"] = round(statistics.median(starts), 3) if starts else None
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["total_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
