"""The read every format shares (server/export/base.py read_for_writing): a dataset's trim
applied to the steps and to the input's step indices (tags, narrations, replay step), and an
end tag then cutting the kept steps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from server.export import ExportOptions, TaggedSpan, export_dataset
from server.export.base import read_for_writing
from server.export.narration import NarratedSpan
from tests.export.conftest import episode_input
from tests.export.recordings import Recording


def test_a_trim_moves_the_step_indices_to_the_kept_steps(
    recordings: dict[str, list[Recording]],
) -> None:
    rec = recordings["cartpole"][1]
    n = rec.num_steps
    tags = (TaggedSpan("early", 0, 1), TaggedSpan("mid", 1, 4), TaggedSpan("late", n - 1, n - 1))
    ep = replace(
        episode_input(rec, step_tags=tags),
        narrations=(NarratedSpan(0, 2, "start"), NarratedSpan(3, n - 1, "rest")),
        replay_step=1,
        trim=(2, 1),
    )
    kept, episode = read_for_writing(ep, ExportOptions())
    assert len(episode) == n - 3 and kept.trim == (0, 0)
    # "early" covers none of the kept steps; "mid" 2..4 -> 0..2; "late" is cut off
    assert kept.step_tags == (TaggedSpan("mid", 0, 2),)
    assert kept.narrations == (NarratedSpan(0, 0, "start"), NarratedSpan(1, n - 4, "rest"))
    assert kept.replay_step == -1  # step 1 is dropped
    assert kept.ending_fields(episode)["ended_by"] == "trim"
    # an end tag on a kept step cuts there, counted in the kept steps
    cut = replace(ep, step_tags=(TaggedSpan("crash", 4, 4),))
    kept, episode = read_for_writing(cut, ExportOptions(end_tags=("crash",)))
    assert kept.step_tags == (TaggedSpan("crash", 2, 2),) and len(episode) == 3
    assert kept.ending_fields(episode)["ended_by"] == "end_tag"
    # no trim: the input as it was
    plain = episode_input(rec, step_tags=tags)
    assert read_for_writing(plain, ExportOptions())[0] is plain


@pytest.mark.parametrize("fmt", ["tfds", "minari", "lerobot"])
def test_every_format_writes_the_trimmed_steps(
    fmt: str, recordings: dict[str, list[Recording]], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    recs = recordings["cartpole"][:2]
    inputs = [replace(episode_input(recs[0]), trim=(1, 2)), episode_input(recs[1])]
    result = export_dataset(inputs, ExportOptions(name="trimmed", format=fmt), tmp_path / "out")
    lengths = [e.num_steps for e in result.episodes]
    assert lengths == [recs[0].num_steps - 3, recs[1].num_steps]
    assert [e.ended_by for e in result.episodes][0] == "trim"
    assert result.episodes[0].terminated is False
