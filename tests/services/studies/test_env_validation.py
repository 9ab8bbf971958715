"""The validation cache stays bounded: the least recently used reports go first."""

from __future__ import annotations

import os
from pathlib import Path

from server.services.studies import env_validation


def test_the_cache_keeps_the_most_recently_used(tmp_path: Path) -> None:
    folder = env_validation.cache_dir(tmp_path)
    folder.mkdir(parents=True)
    keys = [f"{i:064x}" for i in range(5)]
    for age, key in enumerate(keys):
        (folder / f"{key}.json").write_text("{}")
        (folder / f"{key}.jpg").write_bytes(b"jpeg")
        os.utime(folder / f"{key}.json", (1000 + age, 1000 + age))
    assert env_validation._cached(tmp_path, keys[0]) == {}  # used now: kept
    assert env_validation.prune_cache(tmp_path, keep=3) == 2
    left = sorted(p.name for p in folder.iterdir())
    kept = sorted([keys[0], keys[3], keys[4]])
    assert left == sorted([f"{k}.jpg" for k in kept] + [f"{k}.json" for k in kept])
    assert env_validation.prune_cache(tmp_path, keep=3) == 0
