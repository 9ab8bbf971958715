"""The split rule: which of train, validation and test each episode of a dataset goes to.

Pure (no database): it takes units (an episode, or a participant with all their episodes)
and returns each unit's split. The rule, as docs/export.md states it:

1. Each unit has a stratum, its (environment, task); a participant's is the one most of
   their episodes have (ties: the first in sort order).
2. Units are ordered by stratum, then by ``sha256("<seed>:<unit key>")`` in hex (the key:
   the episode id, or the participant's pseudonymous agent id as exports write it).
3. The target of each split is its fraction of all episodes, rounded by largest remainder
   (ties: train, then validation, then test), so the targets add up to the total.
4. In that order, each unit goes to the split furthest behind its share so far
   (``target × episodes so far ÷ total − episodes given``, ties in split order), among
   the splits with a non-zero fraction still under their target (all of those with a
   non-zero fraction when every one is full, which only a participant's many episodes can
   make happen).

With one episode per unit the splits get exactly their targets; with participants they
get them as closely as participants' episode counts allow, no participant in two splits.
Walking the strata one after another keeps every (environment, task) near the fractions.
``none`` puts every unit in train.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Unit:
    """What goes to one split as a whole: an episode, or a participant's episodes."""

    key: str  # the episode id, or the participant's agent id
    stratum: tuple[str, str]  # (env_key, task_key or "")
    size: int  # episodes


def order_key(seed: int, key: str) -> str:
    """Where a unit falls within its stratum: ``sha256("<seed>:<key>")`` in hex."""
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def targets(total: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Each split's share of ``total`` episodes, by largest remainder (ties in split order)."""
    exact = {s: total * fractions[s] for s in SPLITS}
    out = {s: math.floor(exact[s]) for s in SPLITS}
    left = total - sum(out.values())
    by_remainder = sorted(SPLITS, key=lambda s: (-(exact[s] - out[s]), SPLITS.index(s)))
    for s in by_remainder[:left]:
        out[s] += 1
    return out


def dominant_stratum(strata: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """The stratum most of a participant's episodes have (ties: the first in sort order)."""
    counts: dict[tuple[str, str], int] = {}
    for s in strata:
        counts[s] = counts.get(s, 0) + 1
    return min(counts, key=lambda s: (-counts[s], s))


def assign(units: Sequence[Unit], fractions: Mapping[str, float], seed: int) -> dict[str, str]:
    """Unit key -> split, by the rule of this module's docstring."""
    ordered = sorted(units, key=lambda u: (u.stratum, order_key(seed, u.key), u.key))
    total = sum(u.size for u in ordered)
    goal = targets(total, fractions)
    used = [s for s in SPLITS if fractions[s] > 0]
    given = dict.fromkeys(SPLITS, 0)
    so_far = 0
    out: dict[str, str] = {}
    for unit in ordered:
        so_far += unit.size
        pool = [s for s in used if given[s] < goal[s]] or used
        split = max(pool, key=lambda s: (goal[s] * so_far / total - given[s], -SPLITS.index(s)))
        given[split] += unit.size
        out[unit.key] = split
    return out


def assign_all_to_train(units: Sequence[Unit]) -> dict[str, str]:
    """The ``none`` split: one set, train."""
    return {u.key: "train" for u in units}
