"""Players at 60 fps through the load balancer, with one and with two app replicas.

Starts the deployment of docker/compose.yaml natively (tests/deploy/harness.py: a fresh
PostgreSQL database, replicas started by docker/start.sh on one data root, HAProxy with
docker/haproxy.cfg), an active study with Pong in async mode at 60 fps, and runs the rounds
of benchmarks/concurrency.py (headless players joining and playing through HAProxy) for
growing numbers of players until late frames reach 1 %. Reports, per number of replicas, the
most players with under 1 % late frames, per replica and per core (this machine is CPU bound:
replicas share its cores, so per-core figures are what carries over to more machines).
Needs PostgreSQL at 127.0.0.1:5432 (STUDIO_DEPLOY_PG_URL) and HAProxy. Prints JSON.
``--smoke`` plays one round of one player for half a second behind two replicas: it checks
that the benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/replicas.py [--replicas 1,2] [--sessions 4,8,12] [--seconds 6]
                                            [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.concurrency import PONG, report, run_round  # noqa: E402
from tests.deploy.harness import Deployment, deployment  # noqa: E402

LATE_LIMIT_PCT = 1.0


def _study(dep: Deployment) -> str:
    """An active study with Pong; its permalink token."""
    import httpx

    http = httpx.Client(base_url=dep.url, timeout=30)
    login = http.post(
        "/api/auth/login", json={"email": "admin@example.com", "password": "admin-password-123"}
    )
    login.raise_for_status()
    http.headers["X-CSRF-Token"] = login.json()["csrf_token"]
    study = http.post("/api/studies", json={"spec": {"name": "Bench", "environments": [PONG]}})
    study.raise_for_status()
    state = {"state": "active", "acknowledge_warnings": True}  # past the checklist's warnings
    active = http.post(f"/api/studies/{study.json()['id']}/state", json=state)
    assert active.status_code == 200, active.text
    return str(active.json()["permalink_token"])


def measure(replicas: int, counts: list[int], seconds: float) -> dict[str, Any]:
    """Rounds of growing player counts through the load balancer, until 1 % late frames."""
    with tempfile.TemporaryDirectory(prefix="studio-replicas-") as tmp:
        env = {"STUDIO_MAX_WORKERS": "64"}
        with deployment(Path(tmp), replicas=replicas, env=env) as dep:
            server = {
                "url": dep.url,
                "port": dep.port,
                "token": _study(dep),
                "pids": [r.proc.pid for r in dep.replicas],
            }
            rounds = []
            for n in counts:
                rounds.append(asyncio.run(run_round(server, n, seconds)))
                if rounds[-1]["late_frames_pct"] >= LATE_LIMIT_PCT:
                    break
    fine = [r["sessions"] for r in rounds if r["late_frames_pct"] < LATE_LIMIT_PCT]
    best = max(fine, default=0)
    cores = os.cpu_count() or 1
    # the largest round that got as far as measuring CPU (not one that timed out starting)
    measured = [r for r in rounds if "cpu_per_session_pct" in r]
    biggest = max(measured, key=lambda r: r["sessions"], default=None)
    return {
        "replicas": replicas,
        "players_under_1pct_late": best,
        "players_per_replica": round(best / replicas, 1),
        "players_per_core": round(best / cores, 1),
        # What a core carries by CPU cost alone (app + workers per session, largest round):
        # the figure to compare when other jobs share the machine.
        "players_per_core_by_cpu": (
            round(100 / max(biggest["cpu_per_session_pct"], 0.1), 1) if biggest else None
        ),
        "rounds": rounds,
    }


def main() -> None:
    """Run the deployments and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", default="1,2")
    parser.add_argument("--sessions", default="4,8,12,16,20,24,28,32,40,48")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--smoke", action="store_true", help="one short round: does it run?")
    args = parser.parse_args()
    if args.smoke:
        args.replicas, args.sessions, args.seconds = "2", "1", 0.5
    counts = [int(x) for x in args.sessions.split(",")]
    started = time.monotonic()
    results = [measure(int(r), counts, args.seconds) for r in args.replicas.split(",")]
    report("replicas_behind_haproxy", args, started, results=results)


if __name__ == "__main__":
    main()
