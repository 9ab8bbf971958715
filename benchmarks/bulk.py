"""Bulk actions over many episodes: the job's work (server/services/review/bulk.apply), timed.

Makes a migrated database (SQLite in a temporary folder, or the PostgreSQL URL given as
``--database-url``) with one study of N episode rows (no logs: set_outcome, exclude and
add_tags touch rows only), then times set_outcome, exclude and add_tags over every episode
as a bulk job does, 500 ids a chunk, and the resolution of a filter to ids. Prints one JSON
object. ``--smoke`` uses 200 episodes: it checks that the benchmark still runs (``make test``),
its figures mean nothing.

    .venv/bin/python benchmarks/bulk.py [--episodes 100000] [--database-url URL] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from server.core.db import make_engine, make_sessionmaker  # noqa: E402
from server.core.migrate import upgrade_head  # noqa: E402
from server.models import Episode, Study, StudyEnvironment, User, utcnow  # noqa: E402
from server.services.review import bulk, review  # noqa: E402


def populate(factory, episodes: int) -> int:  # type: ignore[no-untyped-def]
    """A study with ``episodes`` completed episode rows; its id."""
    with factory() as db:
        user = User(email=f"b{uuid.uuid4().hex[:6]}@x.org", name="b", password_hash="x")
        db.add(user)
        db.flush()
        study = Study(owner_id=user.id, name="bench", spec={"name": "bench"})
        db.add(study)
        db.flush()
        env = StudyEnvironment(
            study_id=study.id, env_key="cp", name="cp", position=0,
            source_kind="gymnasium", source_ref="CartPole-v1", mode="sync",
        )  # fmt: skip
        db.add(env)
        db.flush()
        now = utcnow()
        rows = [
            {"id": uuid.uuid4().hex, "study_id": study.id, "study_env_id": env.id, "env_key": "cp",
             "status": "completed", "steps": 10, "total_reward": float(i % 7), "started_at": now,
             "storage_path": "", "frames_dropped": 0, "excluded": False}
            for i in range(episodes)
        ]  # fmt: skip
        for i in range(0, len(rows), 5000):
            db.execute(insert(Episode), rows[i : i + 5000])
        db.commit()
        return int(study.id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--smoke", action="store_true", help="200 episodes: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.episodes = 200
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        upgrade_head(url)
        engine = make_engine(url)
        factory = make_sessionmaker(engine)
        study_id = populate(factory, args.episodes)
        out: dict[str, object] = {
            "database": engine.dialect.name, "episodes": args.episodes, "smoke": args.smoke,
        }  # fmt: skip
        with factory() as db:
            study = db.get(Study, study_id)
            assert study is not None
            started = time.perf_counter()
            ids = bulk.matched_ids(db, study, None, review.EpisodeFilter(statuses=["completed"]))
            out["resolve_filter_s"] = round(time.perf_counter() - started, 3)
            for name, act in (
                ("set_outcome", bulk.BulkAction("set_outcome", outcome="failure")),
                ("exclude", bulk.BulkAction("exclude")),
                ("add_tags", bulk.BulkAction("add_tags", tags=("bench",))),
            ):
                started = time.perf_counter()
                result = bulk.apply(db, study, ids, act, None, Path(tmp))
                seconds = time.perf_counter() - started
                assert result.changed == len(ids), (name, result)
                out[f"{name}_s"] = round(seconds, 3)
                out[f"{name}_episodes_per_s"] = round(len(ids) / seconds)
        engine.dispose()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
