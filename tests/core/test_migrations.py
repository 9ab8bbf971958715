"""Alembic is the only way the schema is made: it must agree with the models."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    delete,
    insert,
    inspect,
    select,
    text,
)

from server.core.db import Base, make_engine
from server.core.migrate import alembic_config, upgrade_head
from tests.conftest import PG_URL, pg_schema_url


def _empty_database(tmp_path):
    """A brand-new empty database of the kind this run tests (and a cleanup)."""
    if not PG_URL:
        return f"sqlite:///{tmp_path / 'empty.db'}", lambda: None
    schema = f"m_{uuid.uuid4().hex[:12]}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return pg_schema_url(PG_URL, schema), drop


def test_upgrade_head_then_models_and_migrations_agree(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        upgrade_head(url)
        engine = make_engine(url)
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
            tables = set(inspect(conn).get_table_names())
        engine.dispose()
        assert diff == []
        assert {t.name for t in Base.metadata.sorted_tables} <= tables
    finally:
        cleanup()


def test_downgrade_to_base_and_up_again(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        config = alembic_config(url)
        command.upgrade(config, "head")
        command.downgrade(config, "base")
        engine = make_engine(url)
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
        command.upgrade(config, "head")
        with engine.connect() as conn:
            assert "episodes" in inspect(conn).get_table_names()
        engine.dispose()
    finally:
        cleanup()


def test_filter_columns_are_indexed(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        upgrade_head(url)
        engine = make_engine(url)
        with engine.connect() as conn:
            insp = inspect(conn)
            indexed = {col for ix in insp.get_indexes("episodes") for col in ix["column_names"]}
        engine.dispose()
        assert {"study_id", "status", "env_key", "participant_id", "started_at"} <= indexed
    finally:
        cleanup()


# --- ids are never handed out twice ---------------------------------------------------------
def _int_id_tables() -> list[Table]:
    """Tables whose rows are known by an integer id (in URLs, exports and answers)."""
    return [
        t
        for t in Base.metadata.sorted_tables
        if [c.name for c in t.primary_key] == ["id"] and isinstance(t.c.id.type, Integer)
    ]


def test_every_integer_id_table_is_declared_to_never_reuse_ids():
    # Alembic's autogenerate does not compare this option: the models must say it themselves
    # so that a migration generated for a new table carries it.
    tables = _int_id_tables()
    assert {t.name for t in tables} >= {"users", "studies", "export_jobs", "episode_tags"}
    assert [t.name for t in tables if not t.dialect_options["sqlite"]["autoincrement"]] == []


def _rows_at_0001() -> dict[str, list[dict[str, Any]]]:
    """Rows of every table as 0001 made them; the last row of each table is unreferenced."""
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    user = {"name": "n", "password_hash": "h", "role": "designer", "is_active": True}
    study = {"owner_id": 1, "state": "draft", "spec": {"name": "s"}, "created_at": now}
    env = {"study_id": 1, "name": "E", "source_kind": "gymnasium", "source_ref": "CartPole-v1"}
    tag = {"episode_id": "e1", "author_id": 1, "created_at": now}
    job = {"study_id": 1, "owner_id": 1, "state": "succeeded", "format": "tfds"}
    job |= {"selection": {}, "options": {}, "episodes_total": 1, "episodes_done": 1}
    return {
        "users": [
            {"id": 1, "email": "a@example.com", "created_at": now, **user},
            {"id": 2, "email": "b@example.com", "created_at": now, **user},
        ],
        "auth_sessions": [
            {"token_hash": "t" * 64, "user_id": 1, "created_at": now, "expires_at": now}
        ],
        "studies": [
            {"id": 1, "name": "one", "permalink_token": "tok", "updated_at": now, **study},
            {"id": 2, "name": "two", "permalink_token": None, "updated_at": now, **study},
        ],
        "study_environments": [
            {"id": 1, "position": 0, "env_key": "cp", "mode": "sync", **env},
            {"id": 2, "position": 1, "env_key": "mc", "mode": "async", **env},
        ],
        "participants": [
            {"id": 1, "study_id": 1, "external_id": "p1", "created_at": now},
            {"id": 2, "study_id": 1, "external_id": "p2", "created_at": now},
        ],
        "sessions": [{"id": "s1", "study_id": 1, "participant_id": 1, "started_at": now}],
        "episodes": [
            {
                "id": episode_id,
                "study_id": 1,
                "study_env_id": 1,
                "env_key": "cp",
                "session_id": "s1",
                "participant_id": 1,
                "status": "completed",
                "steps": 3,
                "total_reward": 1.5,
                "started_at": now,
                "storage_path": f"episodes/1/{episode_id}",
                "frames_dropped": 0,
            }
            for episode_id in ("e1", "e3")
        ],  # fmt: skip
        "episode_tags": [{"id": 1, "name": "good", **tag}, {"id": 2, "name": "bad", **tag}],
        "step_tags": [
            {"id": 1, "name": "jump", "start_step": 0, "end_step": 1, **tag},
            {"id": 2, "name": "fall", "start_step": 2, "end_step": 2, **tag},
        ],
        "notes": [{"id": 1, "body": "first", **tag}, {"id": 2, "body": "second", **tag}],
        "export_jobs": [{"id": 1, "steps_done": 3, **job}, {"id": 2, "steps_done": 0, **job}],
        # made by 0004: inserted once the database is at head
        "episode_deletions": [
            {"id": 1, "study_id": 1, "user_id": 1, "count": 3, "deleted_at": now},
            {"id": 2, "study_id": 1, "user_id": 1, "count": 1, "deleted_at": now},
        ],
        # made by 0007
        "replicas": [
            {
                "id": "host-1-abc",
                "host": "host",
                "pid": 1,
                "address": "h:8000",
                "started_at": now,
                "heartbeat_at": now,
            }
        ],  # fmt: skip
        "live_sessions": [
            {
                "session_id": "s1",
                "replica_id": "host-1-abc",
                "study_id": 1,
                "participant_id": 1,
                "env_key": "cp",
                "phase": "playing",
                "has_worker": True,
                "episode_id": "e1",
                "step": 3,
                "frames_dropped": 0,
                "updated_at": now,
            }
        ],  # fmt: skip
        # made by 0006
        "bulk_jobs": [
            {
                "id": i,
                "study_id": 1,
                "owner_id": 1,
                "state": "succeeded",
                "action": "exclude",
                "params": {},
                "total": 1,
                "done": 1,
                "changed": 1,
                "skipped_recording": 0,
                "created_at": now,
            }
            for i in (1, 2)
        ],  # fmt: skip
        # made by 0010
        "login_failures": [
            {"id": 1, "key": "account:a@example.com", "at": now},
            {"id": 2, "key": "address:192.0.2.1", "at": now},
        ],
        # made by 0014 (session_leases)
        "session_leases": [
            {
                "participant_id": 1,
                "session_id": "s1",
                "replica_id": "host-1-abc",
                "taken_at": now,
                "renewed_at": now,
            }
        ],  # fmt: skip
        # made by 0016 (phone_codes, phone_code_failures)
        "phone_codes": [
            {
                "code": "ACD345",
                "session_id": "s1",
                "replica_id": "app1",
                "ticket": "phone.t",
                "created_at": now,
                "expires_at": now,
            },
        ],  # fmt: skip
        "phone_code_failures": [
            {"id": 1, "address": "192.0.2.1", "at": now},
            {"id": 2, "address": "192.0.2.2", "at": now},
        ],
        # made by 0018
        "replay_checks": [
            {
                "id": i,
                "episode_id": episode_id,
                "study_id": 1,
                "state": "succeeded",
                "created_at": now,
                "attempts": 1,
                "cancel_requested": False,
            }
            for i, episode_id in ((1, "e1"), (2, "e3"))
        ],
        # made by 0019
        "narrations": [
            {
                "id": i,
                "episode_id": "e1",
                "start_step": i,
                "end_step": 2 * i,
                "text": "reach",
                "version": 1,
                "created_at": now,
                "updated_at": now,
            }
            for i in (1, 2)
        ],  # fmt: skip
        # made by 0020
        "feedback_items": [
            {
                "id": i,
                "study_id": 1,
                "question_key": "q",
                "kind": "rate",
                "signature": f"s{i}",
                "episode_a": "e1",
                "a_start": 0,
                "a_end": 5,
                "is_gold": False,
                "gone": False,
                "created_at": now,
            }
            for i in (1, 2)
        ],  # fmt: skip
        "judgements": [
            {
                "id": i,
                "token": f"t{i}",
                "study_id": 1,
                "item_id": i,
                "participant_id": 1,
                "swapped": False,
                "assigned_at": now,
            }
            for i in (1, 2)
        ],  # fmt: skip
        # made by 0022
        "datasets": [
            {
                "id": i,
                "owner_id": 1,
                "name": f"set {i}",
                "description": "",
                "sources": [{"study_id": 1, "filter": {}}],
                "split": {"by": "episode", "train": 1, "validation": 0, "test": 0, "seed": 0},
                "created_at": now,
                "updated_at": now,
            }
            for i in (1, 2)
        ],  # fmt: skip
        # made by 0024
        "dataset_edits": [
            {
                "id": i,
                "dataset_id": 1,
                "kind": "exclude",
                "episode_id": episode_id,
                "task_key": None,
                "trim_start": 0,
                "trim_end": 0,
                "instruction": "",
                "reason": "blurry",
                "author_id": 1,
                "created_at": now,
            }
            for i, episode_id in ((1, "e1"), (2, "e3"))
        ],  # fmt: skip
    }


def _tables_at(engine: Engine) -> MetaData:
    """The models' tables with only the columns the database has now (an older revision),
    Python-side defaults included."""
    with engine.connect() as conn:
        present = {name: {c["name"] for c in inspect(conn).get_columns(name)}
                   for name in inspect(conn).get_table_names()}  # fmt: skip
    old = MetaData()
    for table in Base.metadata.sorted_tables:
        if table.name not in present:  # made by a later revision
            continue
        columns = [Column(c.name, c.type, primary_key=c.primary_key, default=c.default)
                   for c in table.columns if c.name in present[table.name]]  # fmt: skip
        Table(table.name, old, *columns)
    return old


def _snapshot(conn: Connection, tables: MetaData) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of ``tables``' columns (the revision the rows were written at)."""
    return {
        name: [tuple(row) for row in conn.execute(select(t).order_by(*t.primary_key))]
        for name, t in sorted(tables.tables.items())
        if name != "alembic_version"
    }


def test_upgrade_from_0001_keeps_every_row_and_then_never_reuses_an_id(tmp_path):
    rows = _rows_at_0001()
    assert {t.name for t in _int_id_tables()} <= set(rows), "give the new table rows here"
    url, cleanup = _empty_database(tmp_path)
    try:
        config = alembic_config(url)
        command.upgrade(config, "0001")
        engine = make_engine(url)
        old = _tables_at(engine)
        with engine.begin() as conn:
            for table in Base.metadata.sorted_tables:
                if table.name in old.tables:
                    conn.execute(insert(old.tables[table.name]), rows[table.name])
            before = _snapshot(conn, old)
        command.upgrade(config, "head")
        with engine.begin() as conn:
            assert _snapshot(conn, old) == before
            for table in Base.metadata.sorted_tables:
                if table.name not in old.tables:
                    conn.execute(insert(table), rows[table.name])
        if PG_URL:  # rows were given their ids: move the sequences past them, as use would
            with engine.begin() as conn:
                for table in _int_id_tables():
                    conn.execute(text(f"SELECT setval('{table.name}_id_seq', 2)"))
        with engine.begin() as conn:
            if not PG_URL:
                assert list(conn.execute(text("PRAGMA foreign_key_check"))) == []
            # Delete the newest row of each table and add it again: it gets a new id.
            for table in reversed(_int_id_tables()):
                newest = conn.execute(select(table).where(table.c.id == 2)).mappings().one()
                conn.execute(delete(table).where(table.c.id == 2))
                again = {k: v for k, v in newest.items() if k != "id"}
                new_id = conn.execute(insert(table).values(again)).inserted_primary_key[0]
                assert new_id > 2, table.name
        engine.dispose()
    finally:
        cleanup()


def test_0005_marks_designers_plays_as_tests(tmp_path):
    """Episodes played by a logged-in user (user_id set) become test plays; others do not."""
    url, cleanup = _empty_database(tmp_path)
    try:
        config = alembic_config(url)
        command.upgrade(config, "0004")
        engine = make_engine(url)
        rows = _rows_at_0001()
        played_by_designer = {**rows["episodes"][0], "id": "e2", "participant_id": None,
                              "session_id": None, "user_id": 1}  # fmt: skip
        old = _tables_at(engine)
        with engine.begin() as conn:
            for name in ("users", "studies", "study_environments", "participants", "sessions"):
                conn.execute(insert(old.tables[name]), rows[name])
            for episode in ({**rows["episodes"][0], "user_id": None}, played_by_designer):
                conn.execute(insert(old.tables["episodes"]), episode)
        command.upgrade(config, "head")
        with engine.connect() as conn:
            marks = dict(conn.execute(text("SELECT id, is_test FROM episodes ORDER BY id")).all())
            parents = conn.execute(text("SELECT parent_study_id FROM studies")).scalars().all()
        engine.dispose()
        assert {k: bool(v) for k, v in marks.items()} == {"e1": False, "e2": True}
        assert parents == [None, None]
    finally:
        cleanup()


def test_0021_says_who_ended_each_episode_from_its_end_reason(tmp_path):
    """ended_by is filled from end_reason (an episode still recording has none); env_outcome
    stays unknown: the environment's reports were not kept before it."""
    url, cleanup = _empty_database(tmp_path)
    reasons = {"e1": "terminated", "e2": "max_steps", "e3": "canceled", "e4": "disconnected",
               "e5": "env_failed", "e6": None}  # fmt: skip
    try:
        config = alembic_config(url)
        command.upgrade(config, "0020")
        engine = make_engine(url)
        rows = _rows_at_0001()
        old = _tables_at(engine)
        with engine.begin() as conn:
            for name in ("users", "studies", "study_environments", "participants", "sessions"):
                conn.execute(insert(old.tables[name]), rows[name])
            for episode_id, reason in reasons.items():
                episode = {**rows["episodes"][0], "id": episode_id, "end_reason": reason}
                conn.execute(insert(old.tables["episodes"]), episode)
        command.upgrade(config, "head")
        with engine.connect() as conn:
            found = conn.execute(
                text("SELECT id, ended_by, env_outcome FROM episodes ORDER BY id")
            ).all()
        engine.dispose()
        assert {i: who for i, who, _ in found} == {
            "e1": "environment", "e2": "time_limit", "e3": "canceled", "e4": "abandoned",
            "e5": "failed", "e6": None,
        }  # fmt: skip
        assert {outcome for _, _, outcome in found} == {None}
    finally:
        cleanup()
