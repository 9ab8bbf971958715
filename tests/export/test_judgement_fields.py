"""The judgement summary fields every format writes (server/export/judgements.py): zeros and
``judged`` false for an episode never judged, no NaN; a summary that is not one (a negative
count, a mean that is not finite, a mean without ratings) is refused before anything is
written, naming the episode; every format writes the same fields, and the card counts the
judged episodes."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from server.export import ExportOptions, InvalidEpisodeError, export_dataset
from server.export.judgements import JudgementSummary
from tests.export.conftest import episode_input
from tests.export.recordings import Recording


def test_never_judged_is_zeros_without_nan() -> None:
    fields = JudgementSummary.of(None).fields()
    assert fields == {"judged": False, "judgement_wins": 0, "judgement_losses": 0,
                      "judgement_ties": 0, "judgement_ratings": 0,
                      "judgement_mean_rating": 0.0}  # fmt: skip
    rated = JudgementSummary.of({"wins": 0, "losses": 2, "ties": 0, "ratings": 3,
                                 "mean_rating": 16 / 3})  # fmt: skip
    assert rated.judged and rated.fields()["judgement_mean_rating"] == 16 / 3
    # only ties still counts as judged; a mean of 0.0 on a scale holding 0 reads by the count
    assert JudgementSummary(ties=1).fields()["judged"] is True


@pytest.mark.parametrize(
    ("summary", "says"),
    [
        (JudgementSummary(wins=-1), "judgement_wins -1 out of range"),
        (JudgementSummary(ratings=1, mean_rating=math.nan), "judgement_mean_rating not finite"),
        (JudgementSummary(ratings=1, mean_rating=math.inf), "judgement_mean_rating not finite"),
        (JudgementSummary(ratings=0, mean_rating=3.0), "a mean rating goes with"),
        (JudgementSummary(ratings=2), "a mean rating goes with"),
    ],
)
def test_a_bad_summary_is_refused_naming_the_episode(
    summary: JudgementSummary, says: str, recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    ep = replace(episode_input(recordings["cartpole"][1]), judgements=summary)
    with pytest.raises(InvalidEpisodeError, match=says) as err:
        export_dataset([ep], ExportOptions(format="minari"), tmp_path / "out")
    assert str(err.value).startswith(f"episode {ep.episode_id}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["envlogger", "minari", "lerobot", "tfds"])
def test_every_format_names_the_fields_and_the_card_counts(
    fmt: str, recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    judged = JudgementSummary(wins=3, losses=1, ties=0, ratings=2, mean_rating=5.5)
    eps = [replace(episode_input(recordings["cartpole"][1]), judgements=judged),
           episode_input(recordings["cartpole"][2])]  # fmt: skip
    result = export_dataset(eps, ExportOptions(name="ds", format=fmt), tmp_path / "out")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "- Judged in feedback studies: 1 of 2 episodes" in card
    assert "`judgement_mean_rating` (0.0 when `judgement_ratings` is 0)" in card
    if fmt == "envlogger":
        doc = json.loads((result.path / "episodes" / "cp-2" / "tags.json").read_text())
        assert doc["judgement_wins"] == 3 and doc["judgement_mean_rating"] == 5.5
        assert doc["judged"] is True
