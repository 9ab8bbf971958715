"""Many players on one server: late frames and CPU per session as the number of players grows.

Starts the app (uvicorn, its own process) on a loopback port, creates an active study with an
Atari game in async mode at 60 fps, then for each N runs N headless protocol clients
(``websockets``) that join as participants, start an episode, ack every frame and change
their input twice a second. Reports per N: achieved fps, the share of late frames (gap to
the previous frame over 1.5 frame periods at the client), and CPU per session (the server
process and all its workers, in % of one core). Prints JSON.

    .venv/bin/python benchmarks/concurrency.py [--sessions 1,4,8,16,24] [--seconds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
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
    "controls": {"keys": {"ArrowUp": 2, "ArrowDown": 3}, "noop": 0},
    "episodes_per_participant": 10_000,
}  # fmt: skip
SECRET = "benchmark-secret-key-0123456789"


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(data_root: Path) -> Any:
    from server.core.config import Settings

    return Settings(environment="test", data_root=data_root, secret_key=SECRET,
                    max_workers=64, load_sample_studies=False)  # fmt: skip


def _serve(data_root: str, port: int) -> None:
    """Child mode: run the app until killed."""
    import uvicorn

    from server.main import create_app

    app = create_app(_settings(Path(data_root)))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio")


@contextlib.contextmanager
def studio_server(env: dict[str, Any], sync: bool = False) -> Iterator[dict[str, Any]]:
    """A migrated database, an active study with ``env``, and the app serving it."""
    from server.core.db import make_engine, make_sessionmaker
    from server.core.migrate import upgrade_head
    from server.models import Role, StudyState
    from server.schemas import UserCreate
    from server.services import studies, users
    from server.study_spec import StudySpec

    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        data_root = Path(tmp) / "data"
        data_root.mkdir()
        settings = _settings(data_root)
        upgrade_head(settings.database_url)
        engine = make_engine(settings.database_url)
        with make_sessionmaker(engine)() as db:
            who = UserCreate(email="bench@example.com", password="benchmark-pw", role=Role.designer)
            owner = users.create_user(db, who)
            spec = StudySpec.model_validate({"name": "Bench", "environments": [env]})
            study = studies.create_study(db, owner.id, spec)
            studies.change_state(db, study, StudyState.active)
            token = study.permalink_token
        engine.dispose()
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(data_root), str(port)], cwd=ROOT
        )
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


def tree_cpu_seconds(root_pid: int) -> float:
    """User + system CPU seconds of ``root_pid`` and all its descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def join(url: str, token: str, who: str) -> str:
    """A participant's play ticket."""
    import httpx

    res = httpx.post(f"{url}/api/play/join", json={"token": token, "participant_id": who})
    res.raise_for_status()
    return str(res.json()["ticket"])


async def player(port: int, ticket: str, seconds: float, out: dict[str, Any]) -> None:
    """One headless player: start, ack every frame, flip the input twice a second."""
    import websockets

    gaps: list[float] = []
    server_gaps: list[float] = []
    frames = 0
    last_server = None
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/play?ticket={ticket}") as ws:
        await ws.send(json.dumps({"type": "start", "env_id": "pong"}))
        last = None
        end = None
        next_input = 0.0
        up = False
        while end is None or time.monotonic() < end:
            message = await ws.recv()
            t = time.monotonic()
            if isinstance(message, str):
                if json.loads(message)["type"] in ("episode_ended", "episode_failed"):
                    break
                continue
            episode, step = int.from_bytes(message[0:4], "big"), int.from_bytes(message[4:8], "big")
            if end is None:
                end = t + seconds
            frames += 1
            server_ms = struct.unpack_from("!d", message, 8)[0]
            if last_server is not None:
                server_gaps.append((server_ms - last_server) / 1000)
            last_server = server_ms
            if last is not None:
                gaps.append(t - last)
            last = t
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
    out["frames"], out["gaps"], out["server_gaps"] = frames, gaps, server_gaps


async def run_round(server: dict[str, Any], n: int, seconds: float) -> dict[str, Any]:
    """N players at once; figures for this N."""
    tickets = [join(server["url"], server["token"], f"bench-{n}-{i}") for i in range(n)]
    outs: list[dict[str, Any]] = [{} for _ in range(n)]
    tasks = [asyncio.create_task(player(server["port"], t, seconds, o))
             for t, o in zip(tickets, outs, strict=True)]  # fmt: skip
    await asyncio.sleep(2.0)  # workers start; measure CPU over the steady part only
    cpu0, wall0 = tree_cpu_seconds(server["pid"]), time.monotonic()
    await asyncio.sleep(max(0.5, seconds - 2.5))
    cpu1, wall1 = tree_cpu_seconds(server["pid"]), time.monotonic()
    await asyncio.gather(*tasks)
    period = 1 / 60
    gaps = [g for o in outs for g in o["gaps"]]
    late = sum(1 for g in gaps if g > 1.5 * period)
    server_gaps = [g for o in outs for g in o["server_gaps"]]
    server_late = sum(1 for g in server_gaps if g > 1.5 * period)
    return {
        "sessions": n,
        "fps_per_session": round(statistics.mean(o["frames"] for o in outs) / seconds, 1),
        "late_frames_pct": round(100 * late / max(1, len(gaps)), 2),
        "late_at_server_pct": round(100 * server_late / max(1, len(server_gaps)), 2),
        "gap_p99_ms": round(sorted(gaps)[int(0.99 * (len(gaps) - 1))] * 1000, 1) if gaps else None,
        "cpu_per_session_pct": round(100 * (cpu1 - cpu0) / (wall1 - wall0) / n, 1),
    }


def main() -> None:
    """Run the rounds and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", default="1,4,8,16,24")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--serve", nargs=2, metavar=("DATA_ROOT", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve[0], int(args.serve[1]))
        return
    counts = [int(x) for x in args.sessions.split(",")]
    started = time.monotonic()
    with studio_server(PONG) as server:
        rounds = [asyncio.run(run_round(server, n, args.seconds)) for n in counts]
    print(json.dumps({"benchmark": "player_concurrency", "env": "ALE/Pong-v5 async 60 fps",
                      "cores": os.cpu_count(), "seconds_per_round": args.seconds,
                      "rounds": rounds, "total_s": round(time.monotonic() - started, 1)},
                     indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
