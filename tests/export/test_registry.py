"""The export formats registry: the built-in formats, and a new format that is one module."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from server.export import (
    ExportError,
    ExportFormat,
    ExportOptions,
    ExportResult,
    export_dataset,
    registry,
)
from server.export.base import EpisodeInput, WriteJob
from server.export.episode import RldsEpisode
from tests.export.conftest import episode_input
from tests.export.recordings import Recording


class Lengths(registry.Format):
    """A format of one text file: each episode's id and length."""

    name = "lengths"

    def write(self, job: WriteJob) -> ExportResult:
        lines: list[str] = []

        def write(_i: int, ep: EpisodeInput, episode: RldsEpisode) -> None:
            lines.append(f"{ep.episode_id} {len(episode)}")

        summaries = job.each_episode(write)
        (job.out / "lengths.txt").write_text("\n".join(lines))
        return ExportResult(path=job.out, format=self.name, episodes=tuple(summaries))

    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        return ["one line per episode"]

    def data_path(self, options: ExportOptions) -> str:
        return "lengths.txt"

    def loading(self, data_path: str) -> str:
        return f"Read `{data_path}`.\n"


@pytest.fixture
def lengths_format() -> Iterator[None]:
    registry.register(Lengths)
    yield
    del registry._formats["lengths"]


def test_the_built_in_formats_are_registered() -> None:
    assert registry.names() == sorted(str(f) for f in ExportFormat)
    assert registry.get("minari").name == ExportFormat.MINARI
    assert [registry.get(f).on_beam for f in ExportFormat] == [True, False, False, False]


def test_an_unknown_format_is_refused_by_name(
    recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    with pytest.raises(ExportError, match="unknown export format 'nope'; formats: envlogger"):
        export_dataset(
            [episode_input(recordings["cartpole"][0])],
            ExportOptions(format="nope"),
            tmp_path / "out",
        )
    assert not (tmp_path / "out").exists()


def test_a_registered_format_runs_as_a_job(
    lengths_format: None, recordings: dict[str, list[Recording]], tmp_path: Path
) -> None:
    recs = recordings["cartpole"]
    seen: list[tuple[int, int, int]] = []
    result = export_dataset(
        [episode_input(r) for r in recs],
        ExportOptions(name="l", format="lengths"),
        tmp_path / "out",
        progress=lambda *a: seen.append(a),
    )
    text = (result.path / "lengths.txt").read_text()
    assert text.splitlines() == [f"{r.episode_id} {r.num_steps}" for r in recs]
    assert seen[-1] == (len(recs), len(recs), sum(r.num_steps for r in recs))
    card = (result.path / "README.md").read_text()
    assert "- Format: lengths" in card and "Read `lengths.txt`." in card
    with pytest.raises(ValueError, match="two export formats"):
        registry.register(Lengths)
    with pytest.raises(ExportError, match="in one process, not on Beam"):
        from server.export.beam_config import BeamConfig

        export_dataset(
            [episode_input(recs[0])],
            ExportOptions(format="lengths", beam=BeamConfig()),
            tmp_path / "beam",
        )
