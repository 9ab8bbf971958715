"""Listing a study of 100,000 episodes on PostgreSQL: a filtered, sorted page, and its count.

Builds (with COPY) a study of ``--episodes`` episodes with tags, participants and quality
signals in a database of its own (its schema made by the migrations), then times what the
``GET /api/studies/{id}/episodes`` route does for several filters: the page query, the
matching count, the participants' ids, the environment medians and the tag names. Prints one
JSON object: per case the median and p95 milliseconds of the whole listing and of its parts,
the total it reports, and the plan of the page query (``--explain``).

    python benchmarks/review_list.py [--url postgresql+psycopg://...] [--reuse] [--explain]
                                     [--episodes 100000] [--repeat 25] [--smoke]

The database (``--url``, else ``STUDIO_BENCH_DATABASE_URL``, else ``h_quality_bench`` on the
local server) is dropped and recreated unless ``--reuse``: its name must start with ``h_`` or
``bench``. ``--smoke`` builds 2,000 episodes in a new database ``bench_smoke_...`` on the
server of ``--url``, pages 50 rows deep instead of 10,000, and drops the database: it checks
that the benchmark still runs (``make test``), its figures mean nothing.

Target: the median listing of a filtered, sorted page (page 1 and a deep page) <= 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.dialects import postgresql  # noqa: E402
from sqlalchemy.engine import Engine, make_url  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from server.core.db import make_engine  # noqa: E402
from server.core.migrate import upgrade_head  # noqa: E402
from server.models import Study  # noqa: E402
from server.services.review import labels, quality, review  # noqa: E402
from tests.deploy.harness import fresh_database as new_database  # noqa: E402

DEFAULT_URL = os.environ.get(
    "STUDIO_BENCH_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/h_quality_bench"
)
ENVS = ("cartpole", "pong")
TAGS = {"good": 0.3, "review": 0.1, "bad": 0.05}
# Cases timed to show what the UI avoids, not held to the target: the UI pages by cursor.
COMPARISON_ONLY = {"return_tag_sort_p50_page_201_offset"}


def fresh_database(url: str) -> None:
    """Drop and recreate the benchmark's database (never the shared test database)."""
    name = make_url(url).database
    if not name or not name.startswith(("h_", "bench")):
        raise SystemExit(f"refusing to recreate database {name!r} (name it h_... or bench...)")
    admin = make_engine(str(make_url(url).set(database="postgres")), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()


def _copy(engine: Engine, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    raw = engine.raw_connection()
    try:
        with raw.cursor() as cur:  # type: ignore[attr-defined]
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        raw.commit()
    finally:
        raw.close()


def build(engine: Engine, n: int, seed: int = 0) -> int:
    """A study of ``n`` episodes (two environments, 2,000 participants, tags); its id."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        user = conn.execute(
            text(
                "INSERT INTO users (email, name, password_hash, role, is_active, created_at) "
                "VALUES ('bench@example.org', 'bench', '-', 'designer', true, :now) RETURNING id"
            ),
            {"now": now},
        ).scalar_one()
        spec = json.dumps({"name": "bench", "environments": [{"id": e} for e in ENVS]})
        study = conn.execute(
            text(
                "INSERT INTO studies (name, owner_id, state, spec, created_at, updated_at) "
                "VALUES ('bench', :u, 'published', CAST(:spec AS JSON), :now, :now) RETURNING id"
            ),
            {"u": user, "spec": spec, "now": now},
        ).scalar_one()
        env_ids = [
            conn.execute(
                text(
                    "INSERT INTO study_environments (study_id, position, env_key, name, "
                    "source_kind, source_ref, mode) VALUES (:s, :p, :k, :k, 'gymnasium', :k, "
                    "'sync') RETURNING id"
                ),
                {"s": study, "p": i, "k": key},
            ).scalar_one()
            for i, key in enumerate(ENVS)
        ]
    participants = [(study, f"P{i:05d}", now, "direct") for i in range(2000)]
    _copy(engine, "participants", ["study_id", "external_id", "created_at", "platform"],
          participants)  # fmt: skip
    with engine.connect() as conn:
        pids = conn.execute(
            text("SELECT id FROM participants WHERE study_id = :s ORDER BY id"), {"s": study}
        ).scalars().all()  # fmt: skip
    env_of = rng.integers(0, len(ENVS), n)
    status = rng.choice(["completed", "abandoned", "failed"], n, p=[0.85, 0.1, 0.05])
    steps = np.maximum(1, rng.lognormal(6.0, 0.6, n)).astype(int)
    ret = rng.normal(20.0, 15.0, n)
    started = rng.uniform(0, 30 * 86400, n)
    p50 = rng.gamma(4.0, 10.0, n)
    measured = rng.random(n) > 0.02
    idle = rng.beta(2.0, 5.0, n)
    ids = [uuid.uuid4().hex for _ in range(n)]
    rows = []
    for i in range(n):
        t0 = now - timedelta(seconds=float(started[i]))
        dur = float(steps[i]) / 30.0
        lat = (float(p50[i]), float(p50[i]) * 1.8, float(p50[i]) * 2.6) if measured[i] else (
            None, None, None)  # fmt: skip
        rows.append((
            ids[i], study, env_ids[env_of[i]], ENVS[env_of[i]], None, int(pids[i % len(pids)]),
            None, str(status[i]), int(rng.integers(0, 2**31)), int(steps[i]), float(ret[i]),
            t0, t0 + timedelta(seconds=dur), dur, f"/data/episodes/{study}/{ids[i]}",
            lat[0], lat[1], int(rng.poisson(0.3)), lat[2], float(idle[i]),
            float(rng.gamma(3.0, 1.0)), now,
        ))  # fmt: skip
    columns = [
        "id", "study_id", "study_env_id", "env_key", "session_id", "participant_id", "user_id",
        "status", "seed", "steps", "total_reward", "started_at", "ended_at", "duration_s",
        "storage_path", "latency_p50_ms", "latency_p95_ms", "frames_dropped", "latency_p99_ms",
        "idle_share", "inputs_per_s", "quality_at",
    ]  # fmt: skip
    _copy(engine, "episodes", columns, rows)
    tags = []
    for name, share in TAGS.items():
        chosen = np.flatnonzero(rng.random(n) < share)
        tags += [(ids[i], name, now) for i in chosen]
    _copy(engine, "episode_tags", ["episode_id", "name", "created_at"], tags)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    with Session(engine) as db:
        quality.refresh_medians(db, env_ids)
        db.commit()
    return int(study)


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return times, out


def _figures(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


def listing(db: Session, study: Study, flt: review.EpisodeFilter, **kw: Any) -> int | str:
    """What the list route does: the page, participants, medians; on a first page the count
    and the tag names (the page's Next pages on by cursor without them)."""
    page = review.list_episodes(db, study, flt, count="after" not in kw, **kw)
    review.external_ids(db, page.items)
    quality.medians(db, study.id)
    if page.total is not None:  # with the count, the tag names for the pickers
        labels.tag_names(db, study.id)
    if page.total is None:
        return "not counted"
    return page.total if page.total_exact else f"{page.total}+"


def explain(db: Session, study: Study, flt: review.EpisodeFilter, **kw: Any) -> list[str]:
    sort = kw.get("sort", review.DEFAULT_SORT)
    cursor = review.decode_cursor(kw["after"], sort) if "after" in kw else None
    query = review.page_query(study.id, flt, sort, cursor)
    query = query.offset(0 if cursor else kw.get("offset", 0)).limit(kw.get("limit", 50))
    sql = str(query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    plan = db.execute(text(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}")).scalars().all()
    return [str(line) for line in plan]


def measure(
    db: Session,
    study: Study,
    flt: review.EpisodeFilter,
    kw: dict[str, Any],
    repeat: int,
    show_plans: bool,
) -> dict[str, Any]:
    """One case: the whole listing, its page query, its capped and exact counts."""
    sort = kw.get("sort", review.DEFAULT_SORT)
    if kw.get("offset") == -1:  # the last page of what matches
        total = review.count_matching(db, study.id, flt)[0]
        kw = {**kw, "offset": max(0, total - 50)}
    if kw.pop("keyset", False):  # the cursor of the row before the page
        before = db.scalars(
            review.page_query(study.id, flt, sort).offset(kw["offset"] - 1).limit(1)
        ).one()
        kw["after"] = review.encode_cursor(before, sort)
    cursor = review.decode_cursor(kw["after"], sort) if "after" in kw else None
    page = review.page_query(study.id, flt, sort, cursor)
    page = page.offset(0 if cursor else kw.get("offset", 0)).limit(50)
    listing(db, study, flt, **kw)  # warm
    times, total = _timed(lambda: listing(db, study, flt, **kw), repeat)
    capped, _ = _timed(lambda: review.count_matching(db, study.id, flt, review.COUNT_CAP), repeat)
    exact, _ = _timed(lambda: review.count_matching(db, study.id, flt), repeat)
    page_times, _ = _timed(lambda: db.scalars(page).all(), repeat)
    case: dict[str, Any] = {
        **_figures(times),
        "total": total,
        "offset": kw.get("offset", 0),
        "page_query": _figures(page_times),
        "count_query_capped": _figures(capped),
        "count_query_exact": _figures(exact),
    }
    if show_plans:
        case["plan"] = explain(db, study, flt, **kw)
    return case


def run(
    url: str, n: int, repeat: int, rebuild: bool, show_plans: bool, deep: int = 10_000
) -> dict[str, Any]:
    """Build (unless not ``rebuild``) and time every case; ``deep``: the deep pages' offset."""
    if rebuild:
        upgrade_head(url)
    engine = make_engine(url)
    started = time.perf_counter()
    if rebuild:
        study_id = build(engine, n)
    else:
        with engine.connect() as conn:
            study_id = conn.execute(text("SELECT max(id) FROM studies")).scalar_one()
    build_s = time.perf_counter() - started
    filtered = review.EpisodeFilter(
        statuses=["completed"], tags=["good"], min_return=10.0, max_return=40.0
    )
    cases: dict[str, tuple[review.EpisodeFilter, dict[str, Any]]] = {
        "default_page1": (review.EpisodeFilter(), {}),
        "return_tag_sort_p50_page1": (filtered, {"sort": "-latency_p50_ms"}),
        # page 201 as the UI reaches it (Next, Next, ...: the cursor of page 200's last row)
        "return_tag_sort_p50_page_201_keyset": (
            filtered,
            {"sort": "-latency_p50_ms", "offset": deep, "keyset": True},
        ),
        # the same page by offset (a deep link's ?offset=10000): for comparison
        "return_tag_sort_p50_page_201_offset": (
            filtered,
            {"sort": "-latency_p50_ms", "offset": deep},
        ),
        "return_tag_sort_p50_last_page_keyset": (
            filtered,
            {"sort": "-latency_p50_ms", "offset": -1, "keyset": True},
        ),
        "length_range_sort_steps": (
            review.EpisodeFilter(min_steps=300, max_steps=900),
            {"sort": "steps"},
        ),
        "flags_p99_idle_short": (
            review.EpisodeFilter(p99_over_ms=100.0, idle_over=0.3, under_median=0.8),
            {"sort": "-latency_p99_ms"},
        ),
        "date_range_env": (
            review.EpisodeFilter(env_keys=["pong"], since=datetime.now(UTC) - timedelta(days=7)),
            {},
        ),
    }
    out: dict[str, Any] = {"episodes": n, "build_s": round(build_s, 1), "cases": {}}
    with Session(engine) as db:
        study = db.get(Study, study_id)
        assert study is not None
        for name, (flt, kw) in cases.items():
            out["cases"][name] = measure(db, study, flt, kw, repeat, show_plans)
    engine.dispose()
    out["target_median_ms"] = 100
    out["within_target"] = {
        k: c["median_ms"] <= 100 for k, c in out["cases"].items() if k not in COMPARISON_ONLY
    }
    out["comparison_only"] = sorted(COMPARISON_ONLY)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="a PostgreSQL database of its own")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--reuse", action="store_true", help="keep the database built before")
    parser.add_argument("--explain", action="store_true", help="print the page queries' plans")
    parser.add_argument("--smoke", action="store_true", help="2,000 episodes: does it run?")
    args = parser.parse_args()
    if args.smoke:
        admin = make_url(args.url).set(database="postgres").render_as_string(hide_password=False)
        with new_database(admin, prefix="bench_smoke_") as url:
            out = run(url, 2000, 2, True, args.explain, deep=50)
    else:
        if not args.reuse:
            fresh_database(args.url)
        out = run(args.url, args.episodes, args.repeat, not args.reuse, args.explain)
    print(json.dumps({**out, "smoke": args.smoke}, indent=1))


if __name__ == "__main__":
    main()
