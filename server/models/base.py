"""What every table shares: the id rules, the clock and the timestamp column type."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, TypeDecorator

# Row ids are INTEGER columns (32-bit on PostgreSQL): larger ids are refused instead of
# overflowing in the database.
MAX_DB_INT = 2**31 - 1


# Integer ids appear in URLs, exports and answers: a deleted row's id must never come back
# for another row. PostgreSQL sequences never go back; SQLite needs AUTOINCREMENT for that
# (it otherwise reuses the largest id after a delete). Every table with an integer id has it.
NO_ID_REUSE = {"sqlite_autoincrement": True}


def is_row_id(text: str) -> bool:
    """``text`` is the decimal id of a row (fits the 32-bit INTEGER columns of PostgreSQL)."""
    return text.isascii() and text.isdigit() and int(text) <= MAX_DB_INT


def utcnow() -> datetime:
    """Timezone-aware now, the only clock rows use."""
    return datetime.now(UTC)


def new_uuid() -> str:
    """A globally unique id as text (episodes, play sessions)."""
    return uuid.uuid4().hex


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every database (SQLite drops the zone on its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


TS = UTCDateTime()  # the type of every timestamp column
