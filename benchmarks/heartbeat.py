"""What a replica's heartbeat costs: the tick's database write, its in-loop snapshot, and
the dashboard's per-study read, for N live sessions on this replica.

The write (replicas.beat: stamp ``heartbeat_at``, replace the replica's ``live_sessions``
rows, one transaction) runs in a thread off the event loop once per tick; the snapshot is
the only part on the loop (attribute reads of each session). Prints JSON. ``--smoke`` runs
3 ticks with 0 and 10 sessions: it checks that the benchmark still runs (``make test``), its
figures mean nothing.

    .venv/bin/python benchmarks/heartbeat.py [--sessions 0,10,60,200] [--ticks 200]
        [--pg postgresql+psycopg://postgres@127.0.0.1:5432/mydb] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402

from server.core.config import Settings  # noqa: E402
from server.core.db import make_engine, make_sessionmaker  # noqa: E402
from server.core.migrate import upgrade_head  # noqa: E402
from server.core.replica import ReplicaInfo  # noqa: E402
from server.models import Study, User  # noqa: E402
from server.player.episode_run import EpisodeRun  # noqa: E402
from server.player.heartbeat import Heartbeat, with_latency  # noqa: E402
from server.player.session import Phase  # noqa: E402
from server.services.live import dashboard, replicas  # noqa: E402


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 3)}  # fmt: skip


def _sessions(n: int, study_id: int) -> dict[str, Any]:
    """Stand-ins for LiveSession with what the snapshot reads (long episodes: 10,000
    latencies each)."""
    out = {}
    for i in range(n):
        run = EpisodeRun(id=uuid.uuid4().hex, index=1, env_id="pong", seed=1, step=5000 + i)
        run.latencies_ms = [float(j % 40) for j in range(10_000)]
        out[f"s{i}"] = SimpleNamespace(
            id=uuid.uuid4().hex, study_id=study_id, phase=Phase.playing, run=run,
            principal=SimpleNamespace(participant_id=None, user_id=None), worker=object(),
            env_id="pong",
        )  # fmt: skip
    return out


def measure(url: str, counts: list[int], ticks: int) -> dict[str, Any]:
    upgrade_head(url)
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    with factory() as db:
        user = User(email=f"{uuid.uuid4().hex}@x.org", name="b", password_hash="x", role="admin")
        db.add(user)
        db.flush()
        study = Study(name="bench", owner_id=user.id, state="active",
                      spec={"name": "bench", "environments": [
                          {"id": "pong", "name": "Pong",
                           "source": {"kind": "gymnasium", "id": "ALE/Pong-v5"}}]})  # fmt: skip
        db.add(study)
        db.commit()
        study_id = study.id
    me = ReplicaInfo(id=f"bench-{uuid.uuid4().hex[:6]}", host="bench", pid=1, address="b:1")
    settings = Settings(environment="test", database_url=url, secret_key="x" * 32,
                        data_root=Path(tempfile.mkdtemp()))  # fmt: skip
    registry = SimpleNamespace(sessions={})
    beat = Heartbeat(registry, settings, factory, me)  # type: ignore[arg-type]
    with factory() as db:
        replicas.register(db, me)
    out: dict[str, Any] = {}
    for n in counts:
        registry.sessions = _sessions(n, study_id)
        snap, write, read = [], [], []
        for _ in range(ticks):
            t0 = time.perf_counter()
            snapshot = beat.snapshot()
            t1 = time.perf_counter()
            rows = with_latency(snapshot)  # in the writer's thread, like the write
            with factory() as db:
                replicas.beat(db, me, rows)
            t2 = time.perf_counter()
            with factory() as db:
                dashboard.snapshot(db, study_id, settings.replica_dead_after_s)
            t3 = time.perf_counter()
            snap.append((t1 - t0) * 1000)
            write.append((t2 - t1) * 1000)
            read.append((t3 - t2) * 1000)
        out[str(n)] = {"snapshot_in_loop": _ms(snap), "write": _ms(write),
                       "dashboard_read": _ms(read)}  # fmt: skip
    with factory() as db:
        replicas.deregister(db, me)
    engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", default="0,10,60,200")
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--pg", default="", help="a PostgreSQL URL (a new schema is used)")
    parser.add_argument("--smoke", action="store_true", help="3 ticks: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.ticks = "0,10", 3
    counts = [int(n) for n in args.sessions.split(",")]
    result: dict[str, Any] = {"ticks": args.ticks, "smoke": args.smoke}
    with tempfile.TemporaryDirectory() as tmp:
        result["sqlite"] = measure(f"sqlite:///{tmp}/bench.db", counts, args.ticks)
    if args.pg:
        schema = f"hb_{uuid.uuid4().hex[:8]}"
        admin = make_engine(args.pg)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            sep = "&" if "?" in args.pg else "?"
            result["postgresql"] = measure(f"{args.pg}{sep}options=-csearch_path%3D{schema}",
                                           counts, args.ticks)  # fmt: skip
        finally:
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
