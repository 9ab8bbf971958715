"""Feedback studies (docs/feedback.md): judges beside players, and how fast a judge can go.

Starts the app (``concurrency.studio_server``, catalog thumbnails off) with the players'
study (Pong, async, 60 fps), a played study whose Pong episodes real sessions record first
(``--recorders`` over the WebSocket protocol, ended by ``max_steps``, saved ``completed``) and
a feedback study over them (a compare and a rate question, clips of ``CLIP_STEPS`` steps,
``min_watch_s`` 0, no gold). A judge, a client of the participant API in a child process (so
that its work does not delay the players' clients), does rounds as fast as the server
answers: ``GET /api/play/judge/next``, every frame of the item's clips one after another
(``.../clips/{c}/frames/{i}``), ``POST .../answer``.

1. ``players``: ``--players`` players (``concurrency.player``, a worker each) for
   ``--seconds`` without judges, then with ``--judges``, ``--rounds`` times in turn: fps,
   late frames (over 1.5 periods after the previous, at the client and on the server's
   stamps), frame interval p50/p95/p99, the app's CPU, the judges' work; the ratios.
2. ``judging``: no players; ``--judge-counts`` judges at once for ``--seconds``: judgements
   per minute (60 s over a judge's median round, times the judges), the latency of a round,
   of ``next``, of a frame and of an answer (median, p95), frames/s, the app's CPU.

Prints JSON (ms). ``--smoke``: two short episodes, one player and one judge for a second
each: does it still run (``make test``); its figures mean nothing.

    .venv/bin/python benchmarks/feedback.py [--players 8] [--judges 4] [--seconds 6] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from concurrency import PONG, STARTUP_TIMEOUT_S, join, machine_cpu, player, studio_server  # noqa: E402
from replay_check import cpu_seconds  # noqa: E402

RECORDED = "rec"  # the played study's environment: Pong, ended by max_steps
CLIP_STEPS = 60
KINDS = ("next", "frame", "answer", "judgement")  # the calls (and rounds) a judge times
LATE = 1.5 / 60  # a frame more than 1.5 periods after the previous one is late
QUESTIONS = [
    {"id": "better", "kind": "compare", "prompt": "Which player plays better?"},
    {"id": "skill", "kind": "rate", "prompt": "How skilled is this player?", "scale_min": 1,
     "scale_max": 5, "low_label": "novice", "high_label": "expert"},
]  # fmt: skip


def pick(values: list[float], q: float) -> float | None:
    """The q-quantile (nearest rank) of seconds, in ms; None without values."""
    return round(sorted(values)[int(q * (len(values) - 1))] * 1000, 2) if values else None


def busy_pct(used: list[int]) -> float:
    """The busy share of all cores in counters of ``machine_cpu`` (idle and iowait out)."""
    return round(100 * (sum(used) - used[3] - used[4]) / max(1, sum(used)), 1)


def late_pct(gaps: list[float]) -> float:
    """The share of frames that came over 1.5 periods after the previous one, in %."""
    return round(100 * sum(g > LATE for g in gaps) / max(1, len(gaps)), 2)


def ratio(a: float | None, b: float | None) -> float | None:
    """b / a: 1.0 when both are 0, None when only a is (or either is missing)."""
    if a is None or b is None or (a == 0 and b != 0):
        return None
    return 1.0 if a == 0 else round(b / a, 2)


# -- the studies -----------------------------------------------------------------------------


def add_study(server: dict[str, Any], spec: dict[str, Any]) -> tuple[int, str]:
    """A new active study of the benchmark's designer in the running server's database."""
    from sqlalchemy import select

    from server.core.db import make_engine, make_sessionmaker
    from server.models import StudyState, User
    from server.services.studies import studies
    from server.study_spec import StudySpec

    engine = make_engine(server["database_url"])
    try:
        with make_sessionmaker(engine)() as db:
            owner = db.scalars(select(User).where(User.email == "bench@example.com")).one()
            study = studies.create_study(db, owner.id, StudySpec.model_validate(spec))
            study = studies.change_state(db, study, StudyState.active)
            return study.id, str(study.permalink_token)
    finally:
        engine.dispose()


async def record_one(port: int, ticket: str) -> dict[str, Any]:
    """One real session plays the recorded environment until max_steps ends it; saved."""
    import websockets

    async with websockets.connect(
        f"ws://127.0.0.1:{port}/ws/play", subprotocols=["rlds-studio", f"ticket.{ticket}"]
    ) as ws:
        await ws.send(json.dumps({"type": "start", "env_id": RECORDED}))
        while True:
            message = await asyncio.wait_for(ws.recv(), STARTUP_TIMEOUT_S)
            if not isinstance(message, str):
                continue  # a frame (the paddle stays put: the ball still plays)
            found = json.loads(message)
            if found["type"] == "episode_started":
                await ws.send(json.dumps({"type": "go"}))
            elif found["type"] == "episode_ended":
                await ws.send(json.dumps({"type": "save", "keep": True}))
            elif found["type"] == "episode_saved":
                return {"status": found["status"], "steps": found["steps"]}
            elif found["type"] in ("episode_failed", "error"):
                raise RuntimeError(f"recording failed: {found}")


def prepare(server: dict[str, Any], recorders: int, steps: int) -> dict[str, Any]:
    """The played study, its episodes recorded by real sessions, the feedback study."""
    env = {**PONG, "id": RECORDED, "name": "Pong (recorded)", "max_steps": steps}
    source_id, source_token = add_study(server, {"name": "Played", "environments": [env]})
    tickets = [join(server["url"], source_token, f"recorder-{i}") for i in range(recorders)]

    async def all_of() -> list[dict[str, Any]]:
        return await asyncio.gather(*(record_one(server["port"], t) for t in tickets))

    started = time.monotonic()
    episodes = asyncio.run(all_of())
    if any(e["status"] != "completed" for e in episodes):
        raise RuntimeError(f"an episode was not saved completed: {episodes}")
    feedback = {
        "source": {"studies": [source_id], "environments": [RECORDED]},
        "questions": QUESTIONS, "clip_steps": min(CLIP_STEPS, steps), "min_watch_s": 0,
        "gold_rate": 0, "judgements_per_participant": 1000,
    }  # fmt: skip
    _, token = add_study(server, {"name": "Judged", "kind": "feedback", "feedback": feedback})
    return {"token": token, "episodes": len(episodes), "steps_each": steps,
            "recording_s": round(time.monotonic() - started, 1),
            "clip_steps": feedback["clip_steps"]}  # fmt: skip


# -- judges (a child process) ----------------------------------------------------------------


async def judge(url: str, ticket: str, stop: Any, out: dict[str, list[Any]]) -> None:
    """next → every frame of its clips → answer, until ``stop`` is set; each call's
    (end time, seconds) kept by kind (the monotonic clock is the same across processes)."""
    import httpx

    def took(kind: str, t0: float) -> None:
        out[kind].append((time.monotonic(), time.monotonic() - t0))

    async with httpx.AsyncClient(base_url=url, headers={"X-Play-Ticket": ticket},
                                 timeout=60) as client:  # fmt: skip
        while not stop.is_set():
            t0 = started = time.monotonic()
            res = await client.get("/api/play/judge/next")
            res.raise_for_status()
            took("next", t0)
            item = res.json()["item"]
            if item is None:
                raise RuntimeError(f"no item left: {res.json()['participant']}")
            token = item["token"]
            for c, clip in enumerate(item["clips"]):
                for i in range(clip["frames"]):
                    t0 = time.monotonic()
                    res = await client.get(f"/api/play/judge/{token}/clips/{c}/frames/{i}")
                    if res.status_code != 200 or res.content[:2] != b"\xff\xd8":
                        raise RuntimeError(f"frame {c}/{i}: {res.status_code} {res.text[:200]}")
                    took("frame", t0)
            n = len(out["answer"])
            compare = item["question"]["kind"] == "compare"
            body = (
                {"choice": ("left", "right", "equal")[n % 3]} if compare else {"rating": 1 + n % 5}
            )
            t0 = time.monotonic()
            res = await client.post(f"/api/play/judge/{token}/answer", json=body)
            if res.status_code != 200:
                raise RuntimeError(f"answer: {res.status_code} {res.text[:300]}")
            took("answer", t0)
            took("judgement", started)  # the whole round: next, frames, answer


def judges_process(url: str, tickets: list[str], stop: Any, ready: Any, results: Any) -> None:
    """Child: the judges until ``stop`` (``ready`` set once each has answered once); then
    their calls, or the first error, on ``results``."""
    outs: list[dict[str, list[Any]]] = [{k: [] for k in KINDS} for _ in tickets]

    async def run() -> None:
        async def readiness() -> None:
            while not all(o["answer"] for o in outs) and not stop.is_set():
                await asyncio.sleep(0.02)
            ready.set()

        judges = [judge(url, t, stop, o) for t, o in zip(tickets, outs, strict=True)]
        await asyncio.gather(readiness(), *judges)

    try:
        asyncio.run(run())
        results.put({"outs": outs})
    except BaseException as exc:  # reported by the parent
        results.put({"error": repr(exc)})
        ready.set()


class Judges:
    """``n`` new judges of the feedback study, working in a child process while in use."""

    def __init__(self, server: dict[str, Any], token: str, n: int, label: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        tickets = [join(server["url"], token, f"judge-{label}-{i}") for i in range(n)]
        self.stop, self.ready, self.results = ctx.Event(), ctx.Event(), ctx.Queue()
        args = (server["url"], tickets, self.stop, self.ready, self.results)
        self.proc = ctx.Process(target=judges_process, args=args, daemon=True)
        self.n = n
        self.found: dict[str, Any] = {}
        self.cpu_s = 0.0  # the child's CPU in the windows measured (:meth:`window`)

    async def window(self, seconds: float) -> tuple[float, float]:
        """Let them work for ``seconds``: the window (their CPU in it added to ``cpu_s``)."""
        cpu0, t0 = cpu_seconds(self.proc.pid or 0), time.monotonic()
        await asyncio.sleep(seconds)
        self.cpu_s += cpu_seconds(self.proc.pid or 0) - cpu0
        return t0, time.monotonic()

    async def __aenter__(self) -> Judges:
        self.proc.start()
        if not await asyncio.to_thread(self.ready.wait, STARTUP_TIMEOUT_S):
            raise RuntimeError("the judges did not get going")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        self.found = await asyncio.to_thread(self.results.get, True, 60)
        await asyncio.to_thread(self.proc.join, 30)
        if "error" in self.found:
            raise RuntimeError(f"a judge failed: {self.found['error']}")

    def figures(self, windows: list[tuple[float, float]]) -> dict[str, Any]:
        """Their calls that ended in ``windows``: rates and latencies."""
        seconds = sum(t1 - t0 for t0, t1 in windows)

        def within(kind: str) -> list[float]:
            return [s for o in self.found["outs"] for end, s in o[kind]
                    if any(t0 <= end <= t1 for t0, t1 in windows)]  # fmt: skip

        found = {kind: within(kind) for kind in KINDS}
        answers, frames, rounds = found["answer"], found["frame"], found["judgement"]
        each = 60 / statistics.median(rounds) if rounds else 0.0  # a judge's judgements/min
        return {
            "judges": self.n,
            "judgements": len(answers),
            "judgements_per_min": round(each * self.n, 1),
            "judgements_per_min_per_judge": round(each, 1),
            "frames_per_s": round(len(frames) / seconds, 1),
            "frames_per_judgement": round(len(frames) / max(1, len(answers)), 1),
            "requests": len(answers) + len(frames) + len(found["next"]),
            **{f"{k}_ms": {"median": pick(v, 0.5), "p95": pick(v, 0.95)} for k, v in found.items()},
            "judges_cpu_cores": round(self.cpu_s / seconds, 3),  # their client work
        }


# -- 1. players beside judges ----------------------------------------------------------------


async def players_window(server: dict[str, Any], seconds: float, crew: Judges | None = None
                         ) -> dict[str, Any]:  # fmt: skip
    """``seconds`` (of ``crew``'s work): the window, the app's CPU and the machine's."""
    cpu0, machine0, t0 = cpu_seconds(server["pid"]), machine_cpu(), time.monotonic()
    if crew is not None:
        t0, t1 = await crew.window(seconds)
    else:
        await asyncio.sleep(seconds)
        t1 = time.monotonic()
    cpu1, machine1 = cpu_seconds(server["pid"]), machine_cpu()
    used = [b - a for a, b in zip(machine0, machine1, strict=True)]
    return {"window": (t0, t1), "app_cpu_s": cpu1 - cpu0, "machine": used}


def condition(outs: list[dict[str, Any]], counters: list[dict[str, Any]]) -> dict[str, Any]:
    """The players' figures over one condition's windows."""
    windows = [c["window"] for c in counters]
    seconds = sum(t1 - t0 for t0, t1 in windows)
    frames = [a for o in outs for a in o["arrivals"]
              if any(t0 <= a[0] <= t1 for t0, t1 in windows)]  # fmt: skip
    gaps, server_gaps = [a[1] for a in frames], [a[2] for a in frames]
    used = [sum(c["machine"][i] for c in counters) for i in range(8)]
    return {
        "frames": len(frames),
        "fps_per_player": round(len(frames) / seconds / max(1, len(outs)), 1),
        "late_frames_pct": late_pct(gaps),
        "late_at_server_pct": late_pct(server_gaps),
        "frame_interval_p50_ms": pick(gaps, 0.5),
        "frame_interval_p95_ms": pick(gaps, 0.95),
        "frame_interval_p99_ms": pick(gaps, 0.99),
        "server_interval_p95_ms": pick(server_gaps, 0.95),
        "app_cpu_cores": round(sum(c["app_cpu_s"] for c in counters) / seconds, 3),
        "machine_busy_pct": busy_pct(used),
    }


async def beside_players(server: dict[str, Any], token: str, players: int, judges: int,
                         seconds: float, rounds: int) -> dict[str, Any]:  # fmt: skip
    """Part 1: the players without judges, then with, ``rounds`` times in turn."""
    tickets = [join(server["url"], server["token"], f"player-{i}") for i in range(players)]
    outs: list[dict[str, Any]] = [{"playing": asyncio.Event(), "stop": asyncio.Event()}
                                  for _ in tickets]  # fmt: skip
    tasks = [asyncio.create_task(player(server["port"], t, o))
             for t, o in zip(tickets, outs, strict=True)]  # fmt: skip
    without: list[dict[str, Any]] = []
    beside: list[dict[str, Any]] = []
    crews: list[Judges] = []
    try:
        await asyncio.wait_for(asyncio.gather(*(o["playing"].wait() for o in outs)),
                               STARTUP_TIMEOUT_S)  # fmt: skip
        await asyncio.sleep(1.0)  # the workers' start-up is over
        for n in range(rounds):
            without.append(await players_window(server, seconds))
            crew = Judges(server, token, judges, f"beside-{n}")
            async with crew:
                beside.append(await players_window(server, seconds, crew))
            crews.append(crew)
    finally:
        for o in outs:
            o["stop"].set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    alone, judged = condition(outs, without), condition(outs, beside)
    if not alone["frames"] or not judged["frames"]:
        raise RuntimeError(f"no frame in a window: {alone} {judged}")
    rounds_of_judges = zip(crews, beside, strict=True)
    judged["judges_each_round"] = [c.figures([b["window"]]) for c, b in rounds_of_judges]
    keys = ("late_frames_pct", "late_at_server_pct", "frame_interval_p95_ms",
            "frame_interval_p99_ms", "server_interval_p95_ms", "fps_per_player",
            "app_cpu_cores")  # fmt: skip
    return {
        "players": players, "env": "ALE/Pong-v5 async 60 fps", "seconds_per_window": seconds,
        "rounds": rounds, "without_judges": alone, "with_judges": judged,
        "ratios": {k: ratio(alone[k], judged[k]) for k in keys},
    }  # fmt: skip


# -- 2. judgements per minute ----------------------------------------------------------------


async def judging_rate(server: dict[str, Any], token: str, n: int, seconds: float
                       ) -> dict[str, Any]:  # fmt: skip
    """Part 2: ``n`` judges alone for ``seconds`` once each answered once."""
    crew = Judges(server, token, n, f"rate-{n}")
    async with crew:
        counters = await players_window(server, seconds, crew)
    found = crew.figures([counters["window"]])
    if not found["frames_per_s"]:
        raise RuntimeError(f"no clip frame in the window: {found}")
    found["app_cpu_cores"] = round(counters["app_cpu_s"] / seconds, 3)
    found["app_cpu_ms_per_request"] = round(1000 * counters["app_cpu_s"] / found["requests"], 2)
    found["machine_busy_pct"] = busy_pct(counters["machine"])
    return found


def main() -> None:
    """Prepare the studies, measure both parts and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=int, default=8)
    parser.add_argument("--judges", type=int, default=4, help="judges beside the players")
    parser.add_argument("--seconds", type=float, default=6.0, help="each window")
    parser.add_argument("--rounds", type=int, default=2, help="windows of each condition")
    parser.add_argument("--judge-counts", default="1,4", help="judges at once in part 2")
    parser.add_argument("--recorders", type=int, default=4, help="episodes recorded")
    parser.add_argument("--steps", type=int, default=240, help="steps of each episode")
    parser.add_argument("--smoke", action="store_true", help="a second each: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.players, args.judges, args.seconds, args.rounds = 1, 1, 1.0, 1
        args.judge_counts, args.recorders, args.steps = "1", 2, 30
    counts = [int(x) for x in args.judge_counts.split(",")]
    started = time.monotonic()
    with studio_server(PONG, server_env={"STUDIO_CATALOG_THUMBNAILS_AT_START": "false"}) as server:
        studies = prepare(server, args.recorders, args.steps)
        token = studies["token"]
        players = asyncio.run(beside_players(server, token, args.players, args.judges,
                                             args.seconds, args.rounds))  # fmt: skip
        judging = [asyncio.run(judging_rate(server, token, n, args.seconds)) for n in counts]
    print(json.dumps({
        "benchmark": "feedback", "cores": os.cpu_count(), "smoke": args.smoke,
        "recorded": {k: v for k, v in studies.items() if k != "token"},
        "players": players, "judging": judging,
        "total_s": round(time.monotonic() - started, 1),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
