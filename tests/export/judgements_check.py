"""The judgement summaries of an RLDS export as a researcher reads them, run with
.consumer-venv/bin/python (real TF, tfds, rlds).

Usage:
    judgements_check.py <data_dir>

Loads the dataset with ``tfds.builder_from_directory``, reads each episode's judgement fields
(top level, or under ``episode_metadata`` in the OXE profile) and, with ``rlds``, the
episode's length; prints one JSON line ``{"mode": "judgements", "episodes": {episode_id:
{field: value, ..., "dtypes": {field: dtype}, "length": n}}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from consumer_check import JUDGEMENT_FIELDS  # noqa: E402


def main(data_dir: str) -> None:
    import rlds
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(data_dir)
    out: dict[str, dict[str, Any]] = {}
    for episode in builder.as_dataset(split="train"):
        meta = episode.get("episode_metadata", episode)
        episode_id = meta["episode_id"].numpy().decode()
        values = {name: meta[name].numpy() for name in JUDGEMENT_FIELDS}
        out[episode_id] = {
            **{name: value.item() for name, value in values.items()},
            "dtypes": {name: str(value.dtype) for name, value in values.items()},
            "length": int(rlds.transformations.episode_length(episode["steps"])),
        }
    print(json.dumps({"mode": "judgements", "episodes": out}))


if __name__ == "__main__":
    main(*sys.argv[1:])
