"""The preference dataset: a feedback study's judgements as JSON Lines and Parquet, one row
per answered judgement, in the schema of docs/feedback.md ("Preference rows"). Both files
hold the same rows in the same order; ``pandas.read_parquet`` or ``read_json(lines=True)``
loads either."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    ("judgement_id", pa.int64()), ("study_id", pa.int64()),
    ("question_id", pa.string()), ("question_kind", pa.string()), ("question", pa.string()),
    ("episode_a", pa.string()), ("a_start", pa.int64()), ("a_end", pa.int64()),
    ("episode_b", pa.string()), ("b_start", pa.int64()), ("b_end", pa.int64()),
    ("left", pa.string()), ("choice", pa.string()), ("preferred_episode", pa.string()),
    ("rating", pa.float64()), ("text", pa.string()),
    ("participant", pa.string()), ("platform", pa.string()),
    ("screened_out", pa.bool_()), ("is_test", pa.bool_()),
    ("assigned_at", pa.string()), ("answered_at", pa.string()), ("answer_ms", pa.int64()),
    ("is_gold", pa.bool_()), ("correct", pa.bool_()),
])  # fmt: skip
JSONL = "preferences.jsonl"
PARQUET = "preferences.parquet"


def _ordered(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, their columns in the schema's order; a row with a column the schema lacks
    (or without one it has) is a ValueError."""
    names = set(SCHEMA.names)
    for row in rows:
        if set(row) != names:
            raise ValueError(f"a preference row's columns differ: {sorted(set(row) ^ names)}")
    return [{n: row[n] for n in SCHEMA.names} for row in rows]


def jsonl_bytes(rows: Sequence[dict[str, Any]]) -> bytes:
    """The JSON Lines file of ``rows``, one object a line."""
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in _ordered(rows))
    return "".join(lines).encode("utf-8")


def parquet_bytes(rows: Sequence[dict[str, Any]]) -> bytes:
    """The Parquet file of ``rows``, in the Arrow types of :data:`SCHEMA`."""
    out = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(_ordered(rows), SCHEMA), out)
    return bytes(out.getvalue().to_pybytes())


ENCODERS = {JSONL: jsonl_bytes, PARQUET: parquet_bytes}


def write(rows: Sequence[dict[str, Any]], folder: Path) -> tuple[Path, Path]:
    """Write ``rows`` (:func:`server.services.feedback.results.preference_rows`) into
    ``folder`` as both files; a row with a column the schema lacks is a ValueError."""
    jsonl, parquet = jsonl_bytes(rows), parquet_bytes(rows)  # both checked before either is written
    folder.mkdir(parents=True, exist_ok=True)
    (folder / JSONL).write_bytes(jsonl)
    (folder / PARQUET).write_bytes(parquet)
    return folder / JSONL, folder / PARQUET
