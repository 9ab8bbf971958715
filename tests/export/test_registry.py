"""The export formats registry: the built-in formats, a format registered in the process, and a
new format that is one folder."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from server.export import (
    ExportError,
    ExportOptions,
    ExportResult,
    export_dataset,
    registry,
)
from server.export.base import EpisodeInput
from server.export.episode import RldsEpisode
from server.export.loop import WriteJob
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
    assert registry.names() == ["tfds", "envlogger", "minari", "lerobot"]  # the API's order
    assert registry.get("minari").name == "minari"
    assert [registry.get(f).on_beam for f in registry.names()] == [True, False, False, False]


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


# A format of the test's own, as a folder: adding it touches nothing else of the server.
STEPS_FORMAT = '''
from server.export.base import ExportResult
from server.export.registry import Format, register


@register
class StepCounts(Format):
    """One text file: each episode's id and number of steps."""

    name = "step_counts"
    summary = "a line per episode"
    position = 50
    card_metadata = "step metadata"
    card_tags = "step tags"

    def write(self, job):
        lines = []
        summaries = job.each_episode(lambda _i, ep, e: lines.append(f"{ep.episode_id} {len(e)}"))
        (job.out / "steps.txt").write_text("\\\\n".join(lines))
        return ExportResult(path=job.out, format=self.name, episodes=tuple(summaries))

    def data_path(self, options):
        return "steps.txt"

    def loading(self, data_path):
        return f"Read `{data_path}`.\\\\n"
'''

# Run in a process of its own: the API schema takes its choices when it is first imported.
CHECK = """
import json, sys
from pathlib import Path

import server.export.formats

server.export.formats.__path__.append(sys.argv[1])  # the folder holding the new format

from server.cli import build_parser
from server.export import EpisodeInput, ExportOptions, registry
from server.export.runner import write_output
from server.schemas.exports import ExportOptionsIn

log_dir, out = Path(sys.argv[2]), Path(sys.argv[3])
episode = EpisodeInput(log_dir=log_dir, episode_id=log_dir.name, agent_id="agent-x")
write_output([episode], ExportOptions(name="counts", format="step_counts"), "folder", out)
export = build_parser()._subparsers._group_actions[0].choices["export"]
print(json.dumps({
    "names": registry.names(),
    "schema": ExportOptionsIn.model_json_schema()["properties"]["format"],
    "cli": next(a.choices for a in export._actions if a.dest == "format"),
}))
"""


def test_a_format_is_one_folder(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    """A folder with one module, put beside the built-in formats: the registry finds it, the
    export's run writes with it, the API's and the command line's choices offer it."""
    folder = tmp_path / "formats" / "step_counts"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(STEPS_FORMAT)
    rec = recordings["cartpole"][0]
    out = tmp_path / "out"
    args = [str(tmp_path / "formats"), str(rec.log_dir), str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    built_in = ["tfds", "envlogger", "minari", "lerobot"]
    assert seen["names"] == [*built_in, "step_counts"]  # by its position (the default first)
    assert seen["schema"]["enum"] == seen["names"] == seen["cli"]
    assert "step_counts: a line per episode" in seen["schema"]["description"]
    assert (out / "steps.txt").read_text() == f"{rec.episode_id} {rec.num_steps}"
    card = (out / "README.md").read_text()
    assert "- Format: step_counts" in card and "Read `steps.txt`." in card
