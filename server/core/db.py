"""Database engine and sessions. Schema changes go through Alembic only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker


class Base(DeclarativeBase):
    """Declarative base of every table."""


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys, WAL and a busy timeout."""
    if url.startswith("sqlite"):
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 30})
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    # psycopg prepares a statement run five times; PostgreSQL then switches to a generic
    # plan that ignores the parameters' values. The episode list's selectivity depends on
    # them (a 100,000-episode study or a small one, a rare tag or a common one): a generic
    # plan counted a filtered list 5x slower than a custom one (benchmarks/review_list.py).
    # connect_args' options replace the URL's own (?options=-csearch_path=...): keep both.
    options = "-c plan_cache_mode=force_custom_plan"
    in_url = make_url(url).query.get("options")
    if in_url:
        options = " ".join([*([in_url] if isinstance(in_url, str) else in_url), options])
    connect_args = kwargs.setdefault("connect_args", {})
    connect_args.setdefault("options", options)
    return create_engine(url, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """Yield a session, roll back on error, always close."""
    session = factory()
    try:
        yield session
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()
