"""Narrations: what happened over an inclusive range of RLDS steps, in words, as every
format carries them per step.

The join rule: a step's narration is the text of every narration covering it (``start <= t
<= end``), in start order (ties: the order they were written), joined with
:data:`JOIN`; "" when none covers it. A narration reaching past the exported episode's last
step (an episode cut at an end tag) covers the steps it has; one that starts after it is
left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

JOIN = " | "


@dataclass(frozen=True)
class NarratedSpan:
    """A narration of steps ``start`` to ``end`` (inclusive RLDS step indices)."""

    start: int
    end: int
    text: str


def narration_column(spans: Sequence[NarratedSpan], num_steps: int) -> list[str]:
    """Per step, the text of the narrations covering it (see the module doc)."""
    covering: list[list[str]] = [[] for _ in range(num_steps)]
    ordered = sorted(enumerate(spans), key=lambda item: (item[1].start, item[0]))
    for _i, span in ordered:
        text = span.text.strip()
        if not text:
            continue
        for t in range(max(span.start, 0), min(span.end, num_steps - 1) + 1):
            covering[t].append(text)
    return [JOIN.join(texts) for texts in covering]
