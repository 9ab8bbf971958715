"""Step tags: one boolean column per tag name, and end-of-episode tags that cut episodes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from server.export.errors import InvalidEpisodeError


@dataclass(frozen=True)
class TaggedSpan:
    """A tag on steps ``start`` to ``end`` (inclusive) of an episode."""

    name: str
    start: int
    end: int


def validate_step_tags(tags: Sequence[TaggedSpan], num_steps: int, episode_id: str) -> None:
    """Raise if a tag's range is not inside the episode's steps."""
    for tag in tags:
        if not tag.name:
            raise InvalidEpisodeError(f"episode {episode_id}: a step tag has no name")
        if not 0 <= tag.start <= tag.end < num_steps:
            raise InvalidEpisodeError(
                f"episode {episode_id}: step tag {tag.name!r} covers steps {tag.start}..{tag.end}"
                f", outside the episode's steps 0..{num_steps - 1}"
            )


def tag_columns(
    tags: Sequence[TaggedSpan], names: Iterable[str], num_steps: int
) -> dict[str, np.ndarray]:
    """For each name, a boolean per step: whether a tag of that name covers the step."""
    columns = {name: np.zeros(num_steps, dtype=bool) for name in sorted(set(names))}
    for tag in tags:
        if tag.name in columns:
            columns[tag.name][tag.start : tag.end + 1] = True
    return columns


def first_end_step(tags: Sequence[TaggedSpan], end_tag_names: Iterable[str]) -> int | None:
    """The first step covered by an end-of-episode tag, or None."""
    names = set(end_tag_names)
    starts = [tag.start for tag in tags if tag.name in names]
    return min(starts) if starts else None
