"""The export's run: selected episodes in, a complete dataset folder out (or nothing at all).

The runner (server/export/runner.py) calls :func:`export_dataset` in a background process. It
checks the request (server/export/request.py), looks the format up in the registry
(server/export/registry.py; each format is a folder of server/export/formats/), lets it write
and writes the card. Output is written to a hidden sibling folder and
renamed into place only when complete, so a failed or canceled export leaves nothing
half-written behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from server.export import registry
from server.export.base import (
    CancelFn,
    EpisodeInput,
    ExportOptions,
    ExportResult,
    ProgressFn,
    Reference,
    in_split_order,
    splits_of,
)
from server.export.card import render_card
from server.export.episode import EnvSpecs, read_header
from server.export.errors import ExportError, InvalidEpisodeError
from server.export.loop import WriteJob
from server.export.packaging import staged
from server.export.request import check_request

CARD_FILE = "README.md"


def _read_header(ep: EpisodeInput) -> tuple[EnvSpecs, dict[str, Any]]:
    if not Path(ep.log_dir).is_dir():
        raise InvalidEpisodeError(f"episode {ep.episode_id}: no log at {ep.log_dir}")
    try:
        return read_header(ep.log_dir)
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors/ValueErrors
        raise InvalidEpisodeError(f"episode {ep.episode_id}: unreadable log ({exc})") from exc


def check_compatible(episodes: Sequence[EpisodeInput]) -> EnvSpecs:
    """The episodes' common specs; raises if their environments' spaces differ."""
    reference = Reference.of(episodes[0], *_read_header(episodes[0]))
    for ep in episodes[1:]:
        reference.check(ep, *_read_header(ep))
    return reference.specs


def export_dataset(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    out_dir: Path,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> ExportResult:
    """Export ``episodes`` into the new folder ``out_dir``.

    ``progress(episodes_done, episodes_total, steps_done)`` is called after each episode;
    ``cancel()`` is polled between episodes and, when true, ends the job with
    :class:`ExportCanceledError`. On any error nothing is left at ``out_dir``.
    """
    out_dir = Path(out_dir)
    if out_dir.exists():  # before the checks, which read logs
        raise ExportError(f"the output folder {out_dir} already exists")
    fmt = check_request(episodes, options)
    splits = splits_of(episodes)
    if splits:  # a dataset's export: train, then validation, then test
        episodes = in_split_order(episodes)
        if options.beam is not None and len(splits) > 1:
            raise ExportError("a dataset's splits are written in one process, not on Beam")
    # The first log's header only: each episode is checked against it where it is read
    # (WriteJob.reference), so that each log is opened once.
    specs, meta = _read_header(episodes[0])
    reference = Reference.of(episodes[0], specs, meta)
    used = sorted({t.name for ep in episodes for t in ep.step_tags})
    tag_names = sorted(set(options.step_tag_names)) if options.step_tag_names is not None else used
    fmt.check(specs, options, tag_names)

    with staged(out_dir, "partial") as tmp:
        result = fmt.write(WriteJob(episodes, options, reference, tag_names, tmp, progress, cancel))
        card = render_card(
            title=options.name,
            study=options.study or str(meta.get("study_id", "")),
            export_format=fmt.label or fmt.name,
            episodes=result.episodes,
            loading=fmt.loading(fmt.data_path(options))
            + (fmt.split_loading(options, splits) if splits else ""),
            options_text=fmt.card_lines(options, tag_names)
            + _videos_text(options)
            + (options.regenerate.card_lines() if options.regenerate else []),
        )
        (tmp / CARD_FILE).write_text(card)
        if options.videos:
            from server.export.episode_video import write_episode_videos  # imports PyAV

            write_episode_videos(episodes, options, tmp, cancel)
    return _moved(result, tmp, out_dir)


def check_format(specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str] = ()) -> None:
    """Refuse, naming the field, what the chosen format cannot hold (before any writing)."""
    registry.get(options.format).check(specs, options, tag_names)


def _videos_text(options: ExportOptions) -> list[str]:
    if not options.videos:
        return []
    return [
        "episode videos: `episode_videos/<episode id>.mp4`, what the player saw at the"
        " recorded times (H.264, plays in browsers)"
    ]


def _moved(result: ExportResult, tmp: Path, out_dir: Path) -> ExportResult:
    def move(p: Path) -> Path:
        return out_dir / p.relative_to(tmp)

    return ExportResult(
        path=out_dir,
        format=result.format,
        episodes=result.episodes,
        data_dir=move(result.data_dir) if result.data_dir else None,
        shard_paths=tuple(move(p) for p in result.shard_paths),
    )
