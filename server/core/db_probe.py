"""``python -m server.core.db_probe URL``: exit 0 when the database answers (used by make)."""

from __future__ import annotations

import sys

from sqlalchemy import create_engine, text


def main(url: str) -> int:
    """Try one query on ``url`` with a short timeout."""
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:  # any failure means "not reachable"
        print(f"database probe failed: {type(exc).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
