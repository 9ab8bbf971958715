"""The export job: selected episodes in, a complete dataset folder out (or nothing at all).

The job runner calls :func:`export_dataset` in a background process. Output is written to a
hidden sibling folder and renamed into place only when complete, so a failed or canceled
export leaves nothing half-written behind.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from server.export import minari_format, oxe
from server.export.beam_config import BeamConfig
from server.export.card import EpisodeSummary, render_card
from server.export.encoding import EpisodeSerializer, episode_example
from server.export.envlogger_format import copy_episode_log, tags_document
from server.export.episode import EnvSpecs, RldsEpisode, log_metadata, read_episode, read_specs
from server.export.errors import (
    ExportCanceledError,
    ExportError,
    IncompatibleEnvironmentsError,
    InvalidEpisodeError,
)
from server.export.features import (
    episode_features,
    episode_fields,
    specs_signature,
    step_features,
)
from server.export.tags import StepTag, first_end_step, tag_columns, validate_step_tags
from server.export.tfds_writer import DEFAULT_MAX_SHARD_BYTES, DatasetWriter, check_dataset_name
from server.recording._envlogger import envlogger

ProgressFn = Callable[[int, int, int], None]
CancelFn = Callable[[], bool]
CARD_FILE = "README.md"
_EPISODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ExportFormat(StrEnum):
    """What an export holds: an RLDS (TFDS) dataset, the raw envlogger logs, Minari or
    LeRobot v3."""

    RLDS = "rlds"
    ENVLOGGER = "envlogger"
    MINARI = "minari"
    LEROBOT = "lerobot"


@dataclass(frozen=True)
class EpisodeInput:
    """One episode to export: its log and its database-side metadata."""

    log_dir: Path
    episode_id: str
    agent_id: str  # salted hash of the participant
    status: str = "completed"
    tags: tuple[str, ...] = ()
    step_tags: tuple[StepTag, ...] = ()
    notes: str = ""
    instruction: str = ""  # the environment's (else the study's) instructions: OXE profile
    # "success" / "failure" / "" (unset): the effective outcome (the reviewer's, else the
    # player's) and both sources
    outcome: str = ""
    player_outcome: str = ""
    reviewer_outcome: str = ""

    def outcome_fields(self) -> dict[str, str]:
        """The episode-level outcome fields every format exports."""
        return {
            "outcome": self.outcome,
            "player_outcome": self.player_outcome,
            "reviewer_outcome": self.reviewer_outcome,
        }


@dataclass(frozen=True)
class ExportOptions:
    """How to export.

    ``step_tag_names``: the step tags that become ``tag:<name>`` fields (None: every name used
    by the episodes). ``end_tags``: step tag names that end an episode at their first tagged
    step (RLDS only; that step becomes the last one, not terminal).
    """

    name: str = "rlds_studio"
    version: str = "1.0.0"
    format: ExportFormat = ExportFormat.RLDS
    keep_step_metadata: bool = True
    step_tag_names: tuple[str, ...] | None = None
    end_tags: tuple[str, ...] = ()
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES
    max_episodes_per_shard: int | None = None
    study: str = ""
    description: str = ""
    profile: str = ""  # "oxe": the Open X-Embodiment profile of the RLDS format
    # RLDS only: run as an Apache Beam pipeline with this runner configuration (None: here,
    # in this process). The output is the same either way (server/export/beam_export.py).
    beam: BeamConfig | None = None
    videos: bool = False  # add episode_videos/<episode_id>.mp4 (what the player saw)


@dataclass(frozen=True)
class ExportResult:
    """A finished export: where it is and what it holds."""

    path: Path
    format: ExportFormat
    episodes: tuple[EpisodeSummary, ...]
    data_dir: Path | None = None  # the TFDS dataset folder (RLDS format)
    shard_paths: tuple[Path, ...] = field(default_factory=tuple)

    @property
    def num_episodes(self) -> int:
        """Episodes exported."""
        return len(self.episodes)

    @property
    def num_steps(self) -> int:
        """RLDS steps exported (observations, including each episode's last)."""
        return sum(e.num_steps for e in self.episodes)


def _check_inputs(episodes: Sequence[EpisodeInput], options: ExportOptions) -> None:
    if not episodes:
        raise ExportError("no episode selected")
    check_dataset_name(options.name, options.version)
    if options.profile not in oxe.PROFILES:
        raise ExportError(f"unknown profile {options.profile!r}; profiles: oxe")
    if options.profile and options.format is not ExportFormat.RLDS:
        raise ExportError(f"the {options.profile} profile applies to the RLDS format only")
    if options.beam is not None and options.format is not ExportFormat.RLDS:
        raise ExportError(f"the {options.format} format is written in one process, not on Beam")
    seen: set[str] = set()
    for ep in episodes:
        if not _EPISODE_ID_RE.match(ep.episode_id):
            raise InvalidEpisodeError(f"episode id {ep.episode_id!r} is not a safe identifier")
        if ep.episode_id in seen:
            raise InvalidEpisodeError(f"episode {ep.episode_id} is selected twice")
        seen.add(ep.episode_id)


def _read_header(ep: EpisodeInput) -> tuple[EnvSpecs, dict[str, Any]]:
    if not Path(ep.log_dir).is_dir():
        raise InvalidEpisodeError(f"episode {ep.episode_id}: no log at {ep.log_dir}")
    try:
        with envlogger.Reader(str(ep.log_dir)) as reader:
            return read_specs(reader), log_metadata(reader)
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors/ValueErrors
        raise InvalidEpisodeError(f"episode {ep.episode_id}: unreadable log ({exc})") from exc


def check_compatible(episodes: Sequence[EpisodeInput]) -> EnvSpecs:
    """The episodes' common specs; raises if their environments' spaces differ."""
    first: tuple[EpisodeInput, EnvSpecs, Any, str] | None = None
    for ep in episodes:
        specs, meta = _read_header(ep)
        if specs.observation is None or specs.action is None:
            raise InvalidEpisodeError(f"episode {ep.episode_id}: its log holds no specs")
        logged_id = meta.get("episode_id")
        if logged_id is not None and str(logged_id) != ep.episode_id:
            raise InvalidEpisodeError(
                f"episode {ep.episode_id}: its log at {ep.log_dir} is episode {logged_id}"
            )
        signature = specs_signature(specs)
        env_id = str(meta.get("env_id", "?"))
        if first is None:
            first = (ep, specs, signature, env_id)
        elif signature != first[2]:
            raise IncompatibleEnvironmentsError(
                "the selected episodes come from environments with different observation or "
                f"action spaces: episode {first[0].episode_id} ({first[3]}) and episode "
                f"{ep.episode_id} ({env_id}); export them separately"
            )
    assert first is not None
    return first[1]


def _prepare(ep: EpisodeInput, options: ExportOptions) -> RldsEpisode:
    episode = read_episode(ep.log_dir)
    validate_step_tags(ep.step_tags, len(episode), ep.episode_id)
    end = first_end_step(ep.step_tags, options.end_tags)
    return episode if end is None else episode.truncated_at(end)


@contextmanager
def naming(episode_id: str) -> Iterator[None]:
    """Errors met while exporting one episode name it, so the user can leave it out."""
    try:
        yield
    except ExportError as exc:
        if str(exc).startswith(f"episode {episode_id}"):
            raise
        raise type(exc)(f"episode {episode_id}: {exc}") from exc
    except (ValueError, TypeError, OverflowError) as exc:  # from TFDS, on a value not checked
        raise ExportError(
            f"episode {episode_id}: cannot encode ({type(exc).__name__}: {exc})"
        ) from exc


def for_each_episode(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    write: Callable[[int, EpisodeInput, RldsEpisode], None],
    progress: ProgressFn | None,
    cancel: CancelFn | None,
) -> list[EpisodeSummary]:
    """A format's writer loop: ``write(i, ep, episode)`` for each episode read and cut as the
    options say; errors it raises name the episode. Polls ``cancel`` between episodes,
    tells ``progress`` after each; returns the episodes' summaries."""
    summaries: list[EpisodeSummary] = []
    steps_done = 0
    for i, ep in enumerate(episodes):
        _check_cancel(cancel)
        with naming(ep.episode_id):
            episode = _prepare(ep, options)
            write(i, ep, episode)
        summaries.append(_summary(ep, episode))
        steps_done += len(episode)
        if progress is not None:
            progress(i + 1, len(episodes), steps_done)
    _check_cancel(cancel)
    return summaries


def _summary(ep: EpisodeInput, episode: RldsEpisode) -> EpisodeSummary:
    return EpisodeSummary(
        episode_id=ep.episode_id,
        env_id=str(episode.log_metadata.get("env_id", "")),
        status=ep.status,
        num_steps=len(episode),
        total_reward=episode.total_reward,
        terminated=episode.terminated,
    )


def _options_text(options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
    if options.format is ExportFormat.ENVLOGGER:
        return ["logs copied as recorded (step tags and notes in each tags.json)"]
    if options.format is ExportFormat.LEROBOT:
        lines = [
            "step metadata (raw input, timing, env info as columns; the player's frames as the"
            " video `observation.images.frame`): "
            + ("kept" if options.keep_step_metadata else "stripped")
        ]
        if tag_names:
            lines.append("step tag columns: " + ", ".join(f"`tag:{n}`" for n in tag_names))
        return lines + _end_text(options)
    if options.format is ExportFormat.MINARI:
        # frames are JPEGs of varying size: Minari's infos hold fixed columns only
        lines = [
            "step metadata (raw input, timing, env info; not the frame) in `infos`: "
            + ("kept" if options.keep_step_metadata else "stripped")
        ]
        if tag_names:
            lines.append("step tag infos: " + ", ".join(f"`tag:{n}`" for n in tag_names))
        return lines + _end_text(options)
    lines = [
        "step metadata (frame JPEG, raw input, timing, env info): "
        + ("kept" if options.keep_step_metadata else "stripped")
    ]
    if tag_names:
        lines.append("step tag fields: " + ", ".join(f"`tag:{n}`" for n in tag_names))
    if options.profile == "oxe":
        lines.append(
            "Open X-Embodiment profile: `language_instruction` on every step, dict observations"
            " (`observation/image` or `observation/state`), episode fields under"
            " `episode_metadata`, statistics in `dataset_statistics.json` beside the shards"
        )
    return lines + _end_text(options)


def _videos_text(options: ExportOptions) -> list[str]:
    if not options.videos:
        return []
    return [
        "episode videos: `episode_videos/<episode id>.mp4`, what the player saw at the"
        " recorded times (H.264, plays in browsers)"
    ]


def _end_text(options: ExportOptions) -> list[str]:
    if not options.end_tags:
        return []
    return [
        "episodes end at their first step tagged "
        + ", ".join(f"`{n}`" for n in options.end_tags)
        + " (not terminal; returns recomputed)"
    ]


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
    if out_dir.exists():
        raise ExportError(f"the output folder {out_dir} already exists")
    _check_inputs(episodes, options)
    specs = check_compatible(episodes)
    used = sorted({t.name for ep in episodes for t in ep.step_tags})
    tag_names = sorted(set(options.step_tag_names)) if options.step_tag_names is not None else used
    check_format(specs, options, tag_names)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.partial-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        if options.format is ExportFormat.RLDS:
            result = _write_rlds(episodes, options, specs, tag_names, tmp, progress, cancel)
        elif options.format is ExportFormat.MINARI:
            from server.export.minari_job import write_minari  # it builds on this module

            result = write_minari(episodes, options, specs, tag_names, tmp, progress, cancel)
        elif options.format is ExportFormat.LEROBOT:
            from server.export.lerobot_job import write_lerobot

            result = write_lerobot(episodes, options, specs, tag_names, tmp, progress, cancel)
        else:
            result = _write_envlogger(episodes, options, tmp, progress, cancel)
        card = render_card(
            title=options.name,
            study=options.study or _study(episodes),
            export_format=str(options.format),
            episodes=result.episodes,
            data_path=_data_path(options),
            options_text=_options_text(options, tag_names) + _videos_text(options),
        )
        (tmp / CARD_FILE).write_text(card)
        if options.videos:
            from server.export.episode_video import write_episode_videos

            write_episode_videos(episodes, options, tmp, cancel)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _moved(result, tmp, out_dir)


def check_format(specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str] = ()) -> None:
    """Refuse, naming the field, what the chosen format cannot hold (before any writing)."""
    if options.format is ExportFormat.MINARI:
        minari_format.check_specs(specs)
    elif options.format is ExportFormat.LEROBOT:
        from server.export.lerobot_format import features_of

        features_of(specs, keep_step_metadata=options.keep_step_metadata, tag_names=tag_names)


def _data_path(options: ExportOptions) -> str:
    if options.format is ExportFormat.MINARI:
        return minari_format.dataset_id(options.name, options.version)
    if options.format is ExportFormat.LEROBOT:
        return options.name
    return f"{options.name}/{options.version}"


def _study(episodes: Sequence[EpisodeInput]) -> str:
    _specs, meta = _read_header(episodes[0])
    return str(meta.get("study_id", ""))


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


def _check_cancel(cancel: CancelFn | None) -> None:
    if cancel is not None and cancel():
        raise ExportCanceledError("the export was canceled")


def rlds_features(specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> Any:
    """The RLDS export's TFDS FeaturesDict (the OXE profile's when chosen)."""
    if options.profile == "oxe":
        step = step_features(
            oxe.profile_specs(specs),
            keep_step_metadata=options.keep_step_metadata,
            step_tag_names=tag_names,
        )
        return oxe.episode_features(step, episode_fields())
    return episode_features(
        specs, keep_step_metadata=options.keep_step_metadata, step_tag_names=tag_names
    )


def dataset_description(options: ExportOptions) -> str:
    """The description in ``dataset_info.json``."""
    return options.description or f"RLDS Studio export of study {options.study}"


def dataset_metadata(options: ExportOptions) -> dict[str, Any]:
    """The metadata in ``dataset_info.json``."""
    return {
        "exporter": "rlds-studio",
        "format": "rlds",
        "profile": options.profile or "rlds",
        "study": options.study,
    }


@dataclass(frozen=True)
class EncodedEpisode:
    """One episode as the RLDS record the shards hold, and what the job says about it."""

    record: bytes  # a serialized tf.train.Example
    summary: EpisodeSummary
    statistics: oxe.EpisodeRows | None  # the OXE profile's per-episode rows


def encode_rlds(
    ep: EpisodeInput,
    options: ExportOptions,
    tag_names: Sequence[str],
    serializer: EpisodeSerializer,
) -> EncodedEpisode:
    """Read, realign and serialize one episode (the work both engines do per episode)."""
    profiled = options.profile == "oxe"
    with naming(ep.episode_id):
        episode = _prepare(ep, options)
        rows = None
        if profiled:
            episode = oxe.wrap_observations(episode)
            rows = oxe.episode_rows(episode)
        columns = tag_columns(ep.step_tags, tag_names, len(episode))
        example = episode_example(
            episode,
            {
                **episode.log_metadata,
                "episode_id": ep.episode_id,
                "agent_id": ep.agent_id,
                "status": ep.status,
                "tags": ep.tags,
                "notes": ep.notes,
                **ep.outcome_fields(),
            },
            keep_step_metadata=options.keep_step_metadata,
            tag_columns=columns,
        )
        if profiled:
            example = oxe.profile_example(example, ep.instruction)
        record = serializer.serialize(example)
    return EncodedEpisode(record, _summary(ep, episode), rows)


def _write_rlds(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    specs: EnvSpecs,
    tag_names: Sequence[str],
    tmp: Path,
    progress: ProgressFn | None,
    cancel: CancelFn | None,
) -> ExportResult:
    if options.beam is not None:
        from server.export.beam_export import write_rlds_beam  # imports apache_beam

        return write_rlds_beam(episodes, options, specs, tag_names, tmp, progress, cancel)
    features = rlds_features(specs, options, tag_names)
    stats = oxe.Statistics()
    serializer = EpisodeSerializer(features)
    writer = DatasetWriter(
        tmp,
        options.name,
        options.version,
        features,
        description=dataset_description(options),
        metadata=dataset_metadata(options),
        max_shard_bytes=options.max_shard_bytes,
        max_episodes_per_shard=options.max_episodes_per_shard,
    )
    summaries: list[EpisodeSummary] = []
    steps_done = 0
    try:
        for i, ep in enumerate(episodes):
            _check_cancel(cancel)
            encoded = encode_rlds(ep, options, tag_names, serializer)
            writer.add(encoded.record)
            if encoded.statistics is not None:
                stats.add(encoded.statistics)
            summaries.append(encoded.summary)
            steps_done += encoded.summary.num_steps
            if progress is not None:
                progress(i + 1, len(episodes), steps_done)
        _check_cancel(cancel)
        written = writer.finish()
        if options.profile == "oxe":
            stats.write(written.data_dir)
    finally:
        writer.close()
    return ExportResult(
        path=tmp,
        format=ExportFormat.RLDS,
        episodes=tuple(summaries),
        data_dir=written.data_dir,
        shard_paths=tuple(written.shard_paths),
    )


def _write_envlogger(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    tmp: Path,
    progress: ProgressFn | None,
    cancel: CancelFn | None,
) -> ExportResult:
    summaries: list[EpisodeSummary] = []
    steps_done = 0
    for i, ep in enumerate(episodes):
        _check_cancel(cancel)
        with naming(ep.episode_id):
            episode = read_episode(ep.log_dir)  # validates the log and gives the card's totals
            validate_step_tags(ep.step_tags, len(episode), ep.episode_id)
        doc = tags_document(
            episode_id=ep.episode_id,
            agent_id=ep.agent_id,
            status=ep.status,
            tags=ep.tags,
            step_tags=ep.step_tags,
            notes=ep.notes,
            outcomes=ep.outcome_fields(),
        )
        copy_episode_log(ep.log_dir, tmp, ep.episode_id, doc)
        summaries.append(_summary(ep, episode))
        steps_done += len(episode)
        if progress is not None:
            progress(i + 1, len(episodes), steps_done)
    _check_cancel(cancel)
    return ExportResult(path=tmp, format=ExportFormat.ENVLOGGER, episodes=tuple(summaries))
