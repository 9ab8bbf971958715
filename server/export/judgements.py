"""Human judgements of an episode, as every format carries them in its episode metadata: the
summary a feedback study's judgements give it (server/services/feedback/results.py).

The fields, alike in every format: ``judged`` (bool: counted in at least one judgement),
``judgement_wins``, ``judgement_losses``, ``judgement_ties`` (compare questions),
``judgement_ratings`` (how many ratings) and ``judgement_mean_rating`` (float64, their mean;
0.0 when ``judgement_ratings`` is 0: read the count first, a scale may hold 0). An episode
never judged has ``judged`` false and zeros: no NaN, which TFDS features and Parquet
statistics handle badly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from server.export.errors import InvalidEpisodeError

JUDGED_FIELD = "judged"
JUDGEMENT_COUNT_FIELDS = ("judgement_wins", "judgement_losses", "judgement_ties",
                          "judgement_ratings")  # fmt: skip
JUDGEMENT_MEAN_FIELD = "judgement_mean_rating"
MAX_COUNT = 2**62


@dataclass(frozen=True)
class JudgementSummary:
    """What an episode's judgements say (zeros: never judged)."""

    wins: int = 0
    losses: int = 0
    ties: int = 0
    ratings: int = 0
    mean_rating: float | None = None  # None when ``ratings`` is 0

    @classmethod
    def of(cls, summary: Mapping[str, Any] | None) -> JudgementSummary:
        """The summary of a results row (``{wins, losses, ties, ratings, mean_rating}``);
        None: never judged."""
        if not summary:
            return cls()
        mean = summary.get("mean_rating")
        return cls(
            wins=int(summary.get("wins", 0)),
            losses=int(summary.get("losses", 0)),
            ties=int(summary.get("ties", 0)),
            ratings=int(summary.get("ratings", 0)),
            mean_rating=None if mean is None else float(mean),
        )

    @property
    def judged(self) -> bool:
        """Whether any judgement counted this episode."""
        return self.wins + self.losses + self.ties + self.ratings > 0

    def check(self, episode_id: str) -> None:
        """Raise unless the counts are whole numbers in range and the mean finite."""
        for name, value in zip(JUDGEMENT_COUNT_FIELDS, self.counts(), strict=True):
            if not 0 <= value < MAX_COUNT:
                raise InvalidEpisodeError(f"episode {episode_id}: {name} {value} out of range")
        if self.mean_rating is not None and not math.isfinite(self.mean_rating):
            raise InvalidEpisodeError(f"episode {episode_id}: {JUDGEMENT_MEAN_FIELD} not finite")
        if (self.mean_rating is None) != (self.ratings == 0):
            raise InvalidEpisodeError(
                f"episode {episode_id}: a mean rating goes with at least one rating"
            )

    def counts(self) -> tuple[int, int, int, int]:
        """wins, losses, ties, ratings."""
        return (self.wins, self.losses, self.ties, self.ratings)

    def fields(self) -> dict[str, Any]:
        """The episode metadata fields (see the module doc)."""
        return {
            JUDGED_FIELD: self.judged,
            **dict(zip(JUDGEMENT_COUNT_FIELDS, self.counts(), strict=True)),
            JUDGEMENT_MEAN_FIELD: 0.0 if self.mean_rating is None else float(self.mean_rating),
        }


FIELDS_TEXT = (
    "`judged` (counted in a feedback study's judgements), `judgement_wins`, "
    "`judgement_losses`, `judgement_ties`, `judgement_ratings` and `judgement_mean_rating` "
    "(0.0 when `judgement_ratings` is 0)"
)
