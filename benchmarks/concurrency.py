"""Many players on one server: late frames and CPU per session as the number of players grows.

Starts the app (uvicorn, its own process) on a loopback port, creates an active study with an
Atari game in async mode at 60 fps, then for each N runs N headless protocol clients
(``websockets``) that join as participants, start an episode, ack every frame and change
their input twice a second. Once every player has its first frames (worker start-up is left
out), it measures for ``--seconds``: achieved fps, the share of late frames (gap to the
previous frame over 1.5 frame periods at the client, and between the server timestamps of
the two frames), and CPU per session in % of one core, split into the app process, its
workers and the benchmark's own clients. Prints JSON. ``--smoke`` plays one round of one
player for half a second: it checks that the benchmark still runs (``make test``), its figures
mean nothing.

    .venv/bin/python benchmarks/concurrency.py [--sessions 1,4,8,16,24] [--seconds 6] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PONG = {
    "id": "pong", "name": "Pong", "mode": "async", "fps": 60, "image_quality": "medium",
    "source": {"kind": "gymnasium", "id": "ALE/Pong-v5",
               "kwargs": {"frameskip": 1, "repeat_action_probability": 0.0}},
    "controls": {"keys": {"ArrowUp": 2, "ArrowDown": 3}, "noop": 0,
                 "not_for_players": [1, 4, 5]},  # its fire actions
    "episodes_per_participant": 10_000,
}  # fmt: skip
SECRET = "benchmark-secret-key-0123456789"
STARTUP_TIMEOUT_S = 60.0  # a round whose players are not all playing by then is over capacity


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(data_root: Path) -> Any:
    from server.core.config import Settings

    return Settings(environment="test", data_root=data_root, secret_key=SECRET,
                    max_workers=256, load_sample_studies=False)  # fmt: skip


def _serve(data_root: str, port: int) -> None:
    """Child mode: run the app until killed."""
    import uvicorn

    from server.main import SERVE_OPTIONS, create_app

    app = create_app(_settings(Path(data_root)))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **SERVE_OPTIONS)


@contextlib.contextmanager
def studio_server(
    env: dict[str, Any],
    sync: bool = False,
    sessions_per_worker: int = 1,
    server_env: dict[str, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """A migrated database, an active study with ``env``, and the app serving it
    (``server_env``: more ``STUDIO_*`` settings for the app). The catalog's thumbnails are
    not built at start (they would take the app's first minute of CPU) unless ``server_env``
    asks for them."""
    from server.core.db import make_engine, make_sessionmaker
    from server.core.migrate import upgrade_head
    from server.models import Role, StudyState
    from server.schemas.users import UserCreate
    from server.services import users
    from server.services.studies import studies
    from server.study_spec import StudySpec

    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        data_root = Path(tmp) / "data"
        data_root.mkdir()
        settings = _settings(data_root)
        upgrade_head(settings.database_url)
        engine = make_engine(settings.database_url)
        with make_sessionmaker(engine)() as db:
            who = UserCreate(email="bench@example.com", password="owl lamp duo", role=Role.designer)
            owner = users.create_user(db, who)
            spec = StudySpec.model_validate({"name": "Bench", "environments": [env]})
            study = studies.create_study(db, owner.id, spec)
            studies.change_state(db, study, StudyState.active)
            token = study.permalink_token
        engine.dispose()
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(data_root), str(port)], cwd=ROOT,
            env={**os.environ, "STUDIO_SESSIONS_PER_WORKER": str(sessions_per_worker),
                 "STUDIO_CATALOG_THUMBNAILS_AT_START": "false", **(server_env or {})},
        )  # fmt: skip
        try:
            _wait_listening(port, proc)
            url = f"http://127.0.0.1:{port}"
            yield {"port": port, "token": token, "data_root": data_root, "pid": proc.pid,
                   "url": url, "database_url": settings.database_url}  # fmt: skip
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError("the server did not start")


def stat_fields(pid: int | str) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first, utime at 11)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()


def tree_cpu_seconds(root_pid: int) -> tuple[float, float]:
    """User + system CPU seconds of ``root_pid`` itself and of all its descendants.

    Descendants count with the CPU of their own reaped children (``cutime``/``cstime``), and
    the root's reaped children count as descendants: a worker that exits between two samples
    moves its seconds to its parent's counters instead of vanishing from the sum.
    """
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    own: dict[int, float] = {}
    reaped: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = stat_fields(entry)
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        own[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
        reaped[int(entry)] = (int(fields[13]) + int(fields[14])) / tick
    descendants = reaped.get(root_pid, 0.0)
    todo = [child for child, parent in parents.items() if parent == root_pid]
    while todo:
        pid = todo.pop()
        descendants += own.get(pid, 0.0) + reaped.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return own.get(root_pid, 0.0), descendants


def servers_cpu_seconds(server: dict[str, Any]) -> tuple[float, float]:
    """:func:`tree_cpu_seconds` summed over the app processes (``pids``, or the one ``pid``)."""
    trees = [tree_cpu_seconds(pid) for pid in server.get("pids") or [server["pid"]]]
    return sum(t[0] for t in trees), sum(t[1] for t in trees)


def machine_cpu() -> list[int]:
    """The machine's CPU time counters (user, nice, system, idle, iowait, irq, softirq, steal)."""
    return [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]


def _own_cpu_seconds() -> float:
    """CPU seconds of this process (the benchmark's clients)."""
    t = os.times()
    return t.user + t.system


def join(url: str, token: str, who: str) -> str:
    """A participant's play ticket."""
    import httpx

    res = httpx.post(f"{url}/api/play/join", json={"token": token, "participant_id": who})
    res.raise_for_status()
    return str(res.json()["ticket"])


async def player(port: int, ticket: str, out: dict[str, Any]) -> None:
    """One headless player: start, ack every frame, flip the input twice a second.

    Plays until ``out["stop"]`` is set; ``out["arrivals"]`` gets one ``(arrival time, gap
    since the previous frame, gap between their server timestamps)`` per frame.
    """
    import websockets

    arrivals: list[tuple[float, float, float]] = []
    out["arrivals"] = arrivals
    last = last_server = None
    next_input = 0.0
    up = False
    async with websockets.connect(
        f"ws://127.0.0.1:{port}/ws/play", subprotocols=["rlds-studio", f"ticket.{ticket}"]
    ) as ws:
        await ws.send(json.dumps({"type": "start", "env_id": "pong"}))
        while not out["stop"].is_set():
            # Starting a worker waits for CPU when the cores are busy: allow a minute.
            message = await asyncio.wait_for(ws.recv(), 10 if last else STARTUP_TIMEOUT_S)
            t = time.monotonic()
            if isinstance(message, str):
                kind = json.loads(message)["type"]
                if kind == "episode_started":  # the ready gate: nothing steps before "go"
                    await ws.send(json.dumps({"type": "go"}))
                if kind in ("episode_ended", "episode_failed"):
                    break
                continue
            episode, step = int.from_bytes(message[0:4], "big"), int.from_bytes(message[4:8], "big")
            server_s = struct.unpack_from("!d", message, 8)[0] / 1000
            if last is not None and last_server is not None:
                arrivals.append((t, t - last, server_s - last_server))
            last, last_server = t, server_s
            out["playing"].set()
            now_ms = time.time() * 1000
            await ws.send(json.dumps({"type": "ack", "episode": episode, "step": step,
                                      "drawn_ms": now_ms}))  # fmt: skip
            if t >= next_input:
                up = not up
                keys = ["ArrowUp" if up else "ArrowDown"]
                await ws.send(json.dumps({"type": "input", "keys": keys, "client_ms": now_ms,
                                          "seen_step": step}))  # fmt: skip
                next_input = t + 0.5
        await ws.send(json.dumps({"type": "cancel"}))


async def run_round(
    server: dict[str, Any], n: int, seconds: float, label: str = "bench"
) -> dict[str, Any]:
    """N players at once; figures for this N over ``seconds`` in which all of them play.
    Each round's players are new participants (``label``): a participant of an earlier
    round would resume that round's session, which may still be waiting for its socket."""
    tickets = [join(server["url"], server["token"], f"{label}-{n}-{i}") for i in range(n)]
    outs: list[dict[str, Any]] = [
        {"playing": asyncio.Event(), "stop": asyncio.Event()} for _ in range(n)
    ]
    tasks = [asyncio.create_task(player(server["port"], t, o))
             for t, o in zip(tickets, outs, strict=True)]  # fmt: skip
    # Worker start-up is not steady state: measure once every player has its frames.
    started = time.monotonic()
    try:
        await asyncio.wait_for(
            asyncio.gather(*(o["playing"].wait() for o in outs)), STARTUP_TIMEOUT_S
        )
    except TimeoutError:  # over capacity: not every player got a frame within the budget
        for o in outs:
            o["stop"].set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "sessions": n,
            "startup_timeout": True,
            "playing": sum(o["playing"].is_set() for o in outs),
            "late_frames_pct": 100.0,
        }
    await asyncio.sleep(0.5)
    startup_s = time.monotonic() - started
    (app0, workers0), clients0 = servers_cpu_seconds(server), _own_cpu_seconds()
    machine0, wall0 = machine_cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    (app1, workers1), clients1 = servers_cpu_seconds(server), _own_cpu_seconds()
    machine1, wall1 = machine_cpu(), time.monotonic()
    used = [b - a for a, b in zip(machine0, machine1, strict=True)]
    for o in outs:
        o["stop"].set()
    await asyncio.gather(*tasks)

    def pct(seconds_used: float) -> float:
        return round(100 * seconds_used / (wall1 - wall0) / n, 1)

    window = [a for o in outs for a in o["arrivals"] if wall0 <= a[0] <= wall1]
    gaps = sorted(a[1] for a in window)
    late = 1.5 / 60  # more than 1.5 frame periods after the previous frame
    return {
        "sessions": n,
        "startup_s": round(startup_s, 2),
        "fps_per_session": round(len(window) / (wall1 - wall0) / n, 1),
        "late_frames_pct": round(100 * sum(g > late for g in gaps) / max(1, len(gaps)), 2),
        "late_at_server_pct": round(
            100 * sum(a[2] > late for a in window) / max(1, len(window)), 2
        ),
        "gap_p99_ms": round(gaps[int(0.99 * (len(gaps) - 1))] * 1000, 1) if gaps else None,
        "cpu_per_session_pct": pct(app1 - app0 + workers1 - workers0),
        "cpu_app_per_session_pct": pct(app1 - app0),
        "cpu_worker_per_session_pct": pct(workers1 - workers0),
        "cpu_client_per_session_pct": pct(clients1 - clients0),
        # the whole machine: busy share of all cores, and time the hypervisor took (steal)
        "machine_busy_pct": round(100 * (sum(used) - used[3] - used[4]) / max(1, sum(used)), 1),
        "machine_steal_pct": round(100 * used[7] / max(1, sum(used)), 1),
    }


def main() -> None:
    """Run the rounds and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", default="1,4,8,16,24")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument(
        "--sessions-per-worker",
        type=int,
        default=4,
        help="the server's STUDIO_SESSIONS_PER_WORKER (1: a process each)",
    )
    parser.add_argument("--serve", nargs=2, metavar=("DATA_ROOT", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="one short round: does it run?")
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve[0], int(args.serve[1]))
        return
    if args.smoke:
        args.sessions, args.seconds = "1", 0.5
    counts = [int(x) for x in args.sessions.split(",")]
    started = time.monotonic()
    warmup = None
    with studio_server(PONG, sessions_per_worker=args.sessions_per_worker) as server:
        if args.sessions_per_worker > 1:
            # Sessions share processes once their environment's cost is measured, as after
            # a study's first player: one player first, long enough for one measurement.
            warmup = asyncio.run(run_round(server, 1, 0.5 if args.smoke else 2.5, "warmup"))
        rounds = [asyncio.run(run_round(server, n, args.seconds)) for n in counts]
    report("player_concurrency", args, started, sessions_per_worker=args.sessions_per_worker,
           warmup=warmup, rounds=rounds)  # fmt: skip


def report(benchmark: str, args: argparse.Namespace, started: float, **results: Any) -> None:
    """Print the JSON of a run of Pong rounds (this benchmark's and benchmarks/replicas.py's)."""
    print(json.dumps({"benchmark": benchmark, "env": "ALE/Pong-v5 async 60 fps",
                      "cores": os.cpu_count(), "seconds_per_round": args.seconds, **results,
                      "total_s": round(time.monotonic() - started, 1), "smoke": args.smoke},
                     indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
