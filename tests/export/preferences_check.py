"""A feedback study's preference dataset as a researcher loads it: pandas one-liners, run
with the LeRobot consumer venv's Python (the one that has pandas).

Usage:
    preferences_check.py <preferences.parquet> <preferences.jsonl>

Loads each file with ``pandas.read_parquet`` / ``pandas.read_json(lines=True)``, checks
both hold the same judgements, and prints one JSON line ``{"mode": "preferences", "rows":
[{column: value}], "columns": [...], "dtypes": {column: dtype}}`` (the Parquet's rows).
"""

from __future__ import annotations

import json
import sys


def main(parquet: str, jsonl: str) -> None:
    import pandas as pd

    table = pd.read_parquet(parquet)
    lines = pd.read_json(jsonl, lines=True, dtype=False)
    assert list(table.columns) == list(lines.columns), (list(table.columns), list(lines.columns))
    assert table["judgement_id"].tolist() == lines["judgement_id"].tolist()
    rows = json.loads(table.to_json(orient="records"))
    print(
        json.dumps(
            {
                "mode": "preferences",
                "rows": rows,
                "columns": list(table.columns),
                "dtypes": {c: str(t) for c, t in table.dtypes.items()},
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
