"""Feedback studies (docs/feedback.md): judges beside players, and what a judged item costs.

Starts the app (``concurrency.studio_server``) with the players' study (Pong, async, 60 fps),
a played study whose Pong episodes real sessions record first (``--recorders`` over the
WebSocket protocol, ended by ``max_steps``, saved ``completed``) and a feedback study over
them (a compare and a rate question, clips of ``CLIP_STEPS`` steps shown at 15 fps,
``min_watch_s`` 0, no gold). A judge (``feedback_parts/judges.py``), a client of the
participant API in a child process (so that its work does not delay the players' clients),
does rounds: ``GET /api/play/judge/next``, the item's clips (``.../clips/{c}``, one request
each, as the judging page fetches them; or, the old way, ``.../clips/{c}/frames/{i}`` frame
after frame), ``POST .../answer``. A *flat-out* judge answers as soon as its clips arrived;
a *paced* one behaves as the page and a person do: it watches the clips through at the
study's fps (60 frames at 15 fps: 4 s) before it answers.

1. ``players``: ``--players`` players (``concurrency.player``, a worker each) for
   ``--seconds`` without judges, then beside ``--judges`` paced judges, then beside as many
   flat-out ones, ``--rounds`` times in turn: fps, late frames (over 1.5 periods after the
   previous, at the client and on the server's stamps), frame interval p50/p95/p99, the
   app's CPU, the judges' work; the ratios to the players alone.
2. ``judging``: no players; ``--judge-counts`` flat-out judges at once for
   ``--rate-seconds``, the old per-frame way and the one-request way in turn: judgements per
   minute (60 s over a judge's median round, times the judges), the latency of a round, of
   ``next``, of a clip and of an answer (median, p95), frames/s, the app's CPU per request
   and per judged item (per request times an item's requests: a window's edges cut rounds).

Prints JSON (ms). ``--smoke``: two short episodes, one player and one judge of each kind
for a second each: does it still run (``make test``); its figures mean nothing.

    .venv/bin/python benchmarks/feedback.py [--players 8] [--judges 4] [--seconds 6] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from concurrency import PONG, STARTUP_TIMEOUT_S, join, machine_cpu, player, studio_server  # noqa: E402
from feedback_parts.judges import WAYS, Judges, pick  # noqa: E402
from replay_check import cpu_seconds  # noqa: E402

RECORDED = "rec"  # the played study's environment: Pong, ended by max_steps
CLIP_STEPS = 60
LATE = 1.5 / 60  # a frame more than 1.5 periods after the previous one is late
QUESTIONS = [
    {"id": "better", "kind": "compare", "prompt": "Which player plays better?"},
    {"id": "skill", "kind": "rate", "prompt": "How skilled is this player?", "scale_min": 1,
     "scale_max": 5, "low_label": "novice", "high_label": "expert"},
]  # fmt: skip


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
        "questions": QUESTIONS, "clip_steps": min(CLIP_STEPS, steps // 2), "min_watch_s": 0,
        "gold_rate": 0, "judgements_per_participant": 1000,
    }  # fmt: skip
    _, token = add_study(server, {"name": "Judged", "kind": "feedback", "feedback": feedback})
    return {"token": token, "episodes": len(episodes), "steps_each": steps,
            "recording_s": round(time.monotonic() - started, 1),
            "clip_steps": feedback["clip_steps"]}  # fmt: skip


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
    """Part 1: the players alone, beside paced judges, beside flat-out ones, in turn."""
    tickets = [join(server["url"], server["token"], f"player-{i}") for i in range(players)]
    outs: list[dict[str, Any]] = [{"playing": asyncio.Event(), "stop": asyncio.Event()}
                                  for _ in tickets]  # fmt: skip
    tasks = [asyncio.create_task(player(server["port"], t, o))
             for t, o in zip(tickets, outs, strict=True)]  # fmt: skip
    windows: dict[str, list[dict[str, Any]]] = {"none": [], "paced": [], "flat_out": []}
    crews: dict[str, list[Judges]] = {"paced": [], "flat_out": []}
    try:
        await asyncio.wait_for(asyncio.gather(*(o["playing"].wait() for o in outs)),
                               STARTUP_TIMEOUT_S)  # fmt: skip
        await asyncio.sleep(1.0)  # the workers' start-up is over
        for n in range(rounds):
            windows["none"].append(await players_window(server, seconds))
            for mode, crew_list in crews.items():
                crew = Judges(server, token, judges, f"{mode}-{n}", paced=mode == "paced")
                async with crew:
                    windows[mode].append(await players_window(server, seconds, crew))
                crew_list.append(crew)
    finally:
        for o in outs:
            o["stop"].set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    found = {mode: condition(outs, w) for mode, w in windows.items()}
    if not all(f["frames"] for f in found.values()):
        raise RuntimeError(f"no frame in a window: {found}")
    for mode, crew_list in crews.items():
        rounds_of = zip(crew_list, windows[mode], strict=True)
        found[mode]["judges_each_round"] = [c.figures([w["window"]]) for c, w in rounds_of]
    keys = ("late_frames_pct", "late_at_server_pct", "frame_interval_p95_ms",
            "frame_interval_p99_ms", "server_interval_p95_ms", "fps_per_player",
            "app_cpu_cores")  # fmt: skip
    alone = found["none"]
    return {
        "players": players, "env": "ALE/Pong-v5 async 60 fps", "seconds_per_window": seconds,
        "rounds": rounds, "judges": judges, "without_judges": alone,
        "paced_judges": found["paced"], "flat_out_judges": found["flat_out"],
        "ratios": {mode: {k: ratio(alone[k], found[mode][k]) for k in keys} for mode in crews},
    }  # fmt: skip


# -- 2. judgements per minute, the app's CPU per item ----------------------------------------


async def judging_rate(server: dict[str, Any], token: str, n: int, seconds: float, way: str
                       ) -> dict[str, Any]:  # fmt: skip
    """Part 2: ``n`` flat-out judges fetching clips ``way`` (of :data:`WAYS`), alone, for
    ``seconds`` once each answered once."""
    crew = Judges(server, token, n, f"rate-{way}-{n}", way=WAYS[way])
    async with crew:
        counters = await players_window(server, seconds, crew)
    found = {"way": way, **crew.figures([counters["window"]])}
    if not found["frames_per_s"] or not found["judgements"]:
        raise RuntimeError(f"no clip or no judgement in the window: {found}")
    cpu_ms = 1000 * counters["app_cpu_s"]
    found["app_cpu_cores"] = round(counters["app_cpu_s"] / seconds, 3)
    found["app_cpu_ms_per_request"] = round(cpu_ms / found["requests"], 2)
    per_item = cpu_ms / found["requests"] * found["requests_per_judgement"]
    found["app_cpu_ms_per_judgement"] = round(per_item, 1)
    found["machine_busy_pct"] = busy_pct(counters["machine"])
    return found


def cpu_per_item(judging: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The app's CPU per judged item, the per-frame way against one request a clip."""
    out = []
    for n in sorted({j["judges"] for j in judging}):
        ms = {j["way"]: j["app_cpu_ms_per_judgement"] for j in judging if j["judges"] == n}
        out.append({"judges": n, **{f"{way}_ms": ms[way] for way in WAYS},
                    "ratio": ratio(ms["per_frame"], ms["one_request"])})  # fmt: skip
    return out


def main() -> None:
    """Prepare the studies, measure both parts and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=int, default=8)
    parser.add_argument("--judges", type=int, default=4, help="judges (of each mode) beside")
    parser.add_argument("--seconds", type=float, default=6.0, help="each window of part 1")
    parser.add_argument("--rate-seconds", type=float, default=4.0, help="each of part 2")
    parser.add_argument("--rounds", type=int, default=2, help="windows of each condition")
    parser.add_argument("--judge-counts", default="1,4", help="judges at once in part 2")
    parser.add_argument("--recorders", type=int, default=4, help="episodes recorded")
    parser.add_argument("--steps", type=int, default=240, help="steps of each episode")
    parser.add_argument("--smoke", action="store_true", help="a second each: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.players, args.judges, args.seconds, args.rate_seconds, args.rounds = 1, 1, 1, 1, 1
        args.judge_counts, args.recorders, args.steps = "1", 2, 30
    counts = [int(x) for x in args.judge_counts.split(",")]
    started = time.monotonic()
    with studio_server(PONG) as server:
        studies = prepare(server, args.recorders, args.steps)
        token = studies["token"]
        players = asyncio.run(beside_players(server, token, args.players, args.judges,
                                             args.seconds, args.rounds))  # fmt: skip
        judging = [asyncio.run(judging_rate(server, token, n, args.rate_seconds, way))
                   for n in counts for way in WAYS]  # fmt: skip
    print(json.dumps({
        "benchmark": "feedback", "cores": os.cpu_count(), "smoke": args.smoke,
        "recorded": {k: v for k, v in studies.items() if k != "token"},
        "players": players, "judging": judging, "app_cpu_per_judged_item": cpu_per_item(judging),
        "total_s": round(time.monotonic() - started, 1),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
